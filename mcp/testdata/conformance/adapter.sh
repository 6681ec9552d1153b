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
  myelin mcp list
  myelin tool call conf--test-tool '{}'
  ;;
*)
  echo "adapter.sh: no steps for scenario $scenario" >&2
  exit 2
  ;;
esac
