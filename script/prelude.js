// The sandbox's side of code_execution: console, tools, and the bridge to
// Go. It runs before the script, captures the bridge functions and removes
// them from the global object, so a script reaches Go only through these.
// A background script (background is true) also gets wake_agent and sleep,
// which myelin answers itself (names outside the tools' alphabet).
(function (names, background) {
  const print = globalThis.__myelin_print;
  const call = globalThis.__myelin_call;
  const finish = globalThis.__myelin_finish;
  const entered = globalThis.__myelin_entered;
  const threw = globalThis.__myelin_threw;
  delete globalThis.__myelin_entered;
  delete globalThis.__myelin_threw;
  delete globalThis.__myelin_print;
  delete globalThis.__myelin_call;
  delete globalThis.__myelin_finish;

  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? String(v) + "\n" + v.stack.replace(/\n$/, "") : String(v);
    if (v === undefined || typeof v === "function" || typeof v === "symbol" || typeof v === "bigint") return String(v);
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  };
  const log = (...args) => print(args.map(show).join(" ") + "\n");
  globalThis.console = Object.freeze({ log, error: log, warn: log, info: log, debug: log });

  const waiting = new Map();
  let next = 0;
  // settle resolves call ticket's promise; myelin leaves out isError
  // and structured when they are false and "" (fewer values to convert).
  const settle = (ticket, text, isError = false, structured = "") => {
    const resolve = waiting.get(ticket);
    waiting.delete(ticket);
    const r = { content: [{ type: "text", text }], isError };
    if (structured !== "") r.structuredContent = JSON.parse(structured);
    resolve(r);
  };
  // keep is every call's promise executor: one function, not a closure
  // made per call; it hands the promise's resolve to the caller.
  let kept;
  const keep = (resolve, reject) => { kept = resolve; };
  const promise = (ticket) => {
    const p = new Promise(keep);
    waiting.set(ticket, kept);
    return p;
  };
  const tools = Object.create(null);
  for (const name of names) {
    tools[name] = (input) => {
      const json = JSON.stringify(input === undefined ? {} : input);
      if (json === undefined) throw new TypeError("the input of " + name + " must be a JSON value");
      const ticket = next++;
      const p = promise(ticket);
      call(ticket, name, json);
      return p;
    };
  }
  // A name that is no tool's throws, naming the tools, where it would be
  // undefined and its call "TypeError: not a function": a model that wrote
  // tools.workspace__grep(...) learns the call's form from its first error.
  // Only a name tools lacks reaches the prototype: a tool's call costs
  // nothing more. `in`, Object.keys and JSON.stringify are untouched, and
  // the keys JavaScript itself probes (then, toJSON, length,
  // Object.prototype's names, symbols) stay undefined.
  const probed = new Set(["then", "toJSON", "length", ...Object.getOwnPropertyNames(Object.prototype)]);
  const squash = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, "");
  const noSuchTool = (key) => {
    const form = (n) => "tools[" + JSON.stringify(n) + "](input)";
    let msg = "tools has no tool " + JSON.stringify(key);
    if (key === "code_execution") {
      msg += ": a script cannot run code_execution.";
    } else {
      const near = names.filter((n) => squash(n) === squash(key) || n.startsWith(key + "--"));
      if (near.length > 0) msg += "; did you mean " + near.slice(0, 5).map(form).join(" or ") + "?";
      else msg += "; call a tool by its full name: " + form("NAME") + ".";
    }
    if (names.length === 0) return new TypeError(msg + " This script has no tools.");
    const shown = names.slice(0, 40).join(", ");
    const more = names.length > 40 ? " and " + (names.length - 40) + " more (Object.keys(tools))" : "";
    return new TypeError(msg + " Its tools: " + shown + more + ".");
  };
  // the target frozen: a script adds nothing to the prototype either
  Object.setPrototypeOf(tools, new Proxy(Object.freeze(Object.create(null)), {
    get(target, key) {
      if (typeof key !== "string" || probed.has(key)) return undefined;
      const e = noSuchTool(key);
      // its line is the script's: the stack from the frame that asked
      e.stack = e.stack.split("\n").slice(2).join("\n");
      throw e;
    },
  }));
  globalThis.tools = Object.freeze(tools);

  // own asks myelin itself: its answer's text resolves the promise, and an
  // error answer rejects it with that text.
  const own = (name, input) => {
    const ticket = next++;
    const p = new Promise((resolve, reject) => waiting.set(ticket, (r) =>
      r.isError ? reject(new Error(r.content[0].text)) : resolve(r.content[0].text)));
    call(ticket, name, JSON.stringify(input));
    return p;
  };
  const only = (name) => () => {
    throw new Error(name + " works only in a background script: start it with code_execution {background: true, code}");
  };
  // the script's line a call of wake_agent came from: the frame after
  // wake_agent's own in a fresh stack.
  const caller = (stack) => {
    const frames = (stack || "").split("\n").filter((f) => /<eval>:\d+/.test(f));
    const m = frames.length > 1 ? /<eval>:(\d+)/.exec(frames[1]) : null;
    return m ? Number(m[1]) : 0;
  };
  const wake_agent = background ? function wake_agent(payload) {
    let line = 0;
    try { line = caller(new Error().stack); } catch (_) {}
    return own("myelin:wake_agent", { line, payload: payload === undefined ? "" : payload });
  } : only("wake_agent");
  const sleep = background ? function sleep(ms) {
    if (typeof ms !== "number" || !(ms >= 0)) throw new TypeError("sleep(ms) takes a number of milliseconds, 0 or more");
    return own("myelin:sleep", { ms });
  } : only("sleep");
  Object.defineProperty(globalThis, "wake_agent", { value: wake_agent });
  Object.defineProperty(globalThis, "sleep", { value: sleep });

  const where = (e) => {
    const m = /<eval>:(\d+)/.exec(e && e.stack || "");
    return m ? Number(m[1]) : 0;
  };
  // done and failed end the script: finish's kind says what its text is.
  // Each catches what reading the value can throw (an engine out of
  // memory), so that the script always ends with finish, never with a
  // promise nothing settles.
  const done = (v) => {
    entered();
    if (v === undefined) return finish("undefined", "", 0);
    if (typeof v === "string") return finish("string", v, 0);
    let json;
    try {
      json = JSON.stringify(v);
    } catch (e) {
      let why = "null";
      try { why = show(e); } catch (_) {}
      return finish("unencodable", why, 0);
    }
    if (json === undefined) return finish("string", String(v), 0);
    return finish("json", json, 0);
  };
  const failed = (e) => {
    entered();
    let line = 0;
    try { line = where(e); } catch (_) {}
    try {
      return e instanceof Error ? finish("error", String(e), line) : finish("thrown", show(e), line);
    } catch (_) {
      return finish("unreadable", "", line);
    }
  };
  // threw is called as the script's body throws: if failed does not
  // follow, the engine lost the promise's rejection (out of memory).
  return { settle, done, failed, threw };
})
