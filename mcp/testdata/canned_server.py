#!/usr/bin/env python3
# A canned MCP server for measuring the memory myelin takes to read one large
# reply (docs/performance.md): it answers initialize and tools/list, and
# streams the result of its one tool, "big", from the file $REPLY, so that
# its own memory stays small (the peak resident size the kernel reports for
# myelin counts the servers it reaped).
import sys, json, os, shutil

for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "canned", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "big", "description": "big", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        head = '{"jsonrpc":"2.0","id":%s,"result":' % json.dumps(m["id"])
        sys.stdout.write(head); sys.stdout.flush()
        with open(os.environ["REPLY"], "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
        sys.stdout.write("}\n"); sys.stdout.flush()
        continue
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n"); sys.stdout.flush()
