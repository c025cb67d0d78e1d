// `thintensor serve` through the official OpenAI client (the npm package `openai`, pinned in
// package.json, installed by .ci/run): greedy text equal to `thintensor run`'s, seeds that
// reproduce, concurrent clients with independent outputs, the error statuses, a burst of
// malformed HTTP, and a disconnect that frees its slot. Started by tests/e2e/serve.sh, which
// passes: THINTENSOR, the model, the chat template, a work folder.
import { spawn, execFileSync } from "node:child_process";
import net from "node:net";
import OpenAI from "openai";

const [binary, model, template, work] = process.argv.slice(2);
const KEY = "test-key-123";
let log = "";
let server = null;
// The server never outlives the test, whatever way it ends.
process.on("exit", () => { if (server && server.exitCode === null && server.signalCode === null) server.kill("SIGKILL"); });
process.on("SIGTERM", () => { console.log("FAIL: the test was stopped (timeout)"); process.exit(1); });
// Whatever escapes a check ends the test with the server's log beside it.
process.on("uncaughtException", (e) => {
  console.log(`FAIL: uncaught ${e?.stack ?? e}\n${e?.cause ? `cause: ${e.cause}\n` : ""}the server's log, last lines:\n${log.split("\n").slice(-25).join("\n")}`);
  process.exit(1);
});
let passed = 0, failed = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log(`FAIL: ${what}`); } };
const eq = (got, want, what) => check(got === want, `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);

// ---- the server: loopback, any free port (read from its log), 4 slots, a small queue
server = spawn(binary, ["serve", model, "--port", "0", "--parallel", "4", "--queue", "16", "--api-key", KEY,
                              "--template", template, "--device", "cpu", "--threads", "2", "--max-body", "64"],
                     { stdio: ["ignore", "ignore", "pipe"] });
const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
const base = await new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error(`serve did not start within 60 s; its log:\n${log}`)), 60000);
  server.stderr.on("data", (d) => {
    log += d;
    const m = log.match(/on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) { clearTimeout(t); resolve(m[1]); }
  });
  server.on("exit", (code) => reject(new Error(`serve exited with ${code} before listening; its log:\n${log}`)));
});
check(/decode steps of concurrent requests are batched/.test(log), "the startup log says the CPU backend batches");
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
const metric = async (name) => {
  const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } })).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, "m"));
  return m ? Number(m[1]) : NaN;
};

// `thintensor run`'s text for the same request (--json: the text exactly, without the newline
// run adds on a terminal).
const run = (args) => {
  const t = args.includes("--temperature") ? [] : ["--temperature", "0"];
  return JSON.parse(execFileSync(binary, ["-q", "run", model, "--device", "cpu", "--json", ...t, ...args], { encoding: "utf8" })).text;
};
const complete = async (prompt, extra = {}) =>
  (await client.completions.create({ model: "tinystories", prompt, ...extra })).choices[0].text;
const completeStream = async (prompt, extra = {}) => {
  let text = "", usage = null;
  for await (const c of await client.completions.create({ model: "tinystories", prompt, stream: true, ...extra })) {
    if (c.choices.length) text += c.choices[0].text;
    if (c.usage) usage = c.usage;
  }
  return { text, usage };
};

// ---- completions and chat, streamed and not, against run
const P = "Once upon a time, there was a little dog named";
const want = run(["-p", P, "-n", "40"]);
check(want.length > 20, "run printed a story");
const r = await client.completions.create({ model: "tinystories", prompt: P, max_tokens: 40, temperature: 0 });
eq(r.choices[0].text, want, "completion, temperature 0 = run");
eq(r.choices[0].finish_reason, "length", "completion stopped by max_tokens: finish_reason");
eq(r.usage.completion_tokens, 40, "completion usage.completion_tokens");
const s = await completeStream(P, { max_tokens: 40, temperature: 0, stream_options: { include_usage: true } });
eq(s.text, want, "streamed completion = run");
check(s.usage && s.usage.completion_tokens === 40 && s.usage.prompt_tokens === r.usage.prompt_tokens,
      `streamed usage in the last chunk: ${JSON.stringify(s.usage)}`);

const U = "Once upon a time, there was a little cat named Tom.";
const wantChat = run(["--chat", "--template", template, "-p", U, "-n", "30"]);
const c = await client.chat.completions.create({ model: "tinystories", messages: [{ role: "user", content: U }], max_tokens: 30, temperature: 0 });
eq(c.choices[0].message.content, wantChat, "chat, temperature 0 = run --chat");
eq(c.choices[0].message.role, "assistant", "chat message role");
let cs = "";
for await (const ch of await client.chat.completions.create({ model: "tinystories", messages: [{ role: "user", content: U }], max_tokens: 30, temperature: 0, stream: true }))
  cs += ch.choices[0]?.delta?.content ?? "";
eq(cs, wantChat, "streamed chat = run --chat");
const lp = await client.chat.completions.create({ model: "tinystories", messages: [{ role: "user", content: U }], max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3 });
const lpc = lp.choices[0].logprobs?.content ?? [];
check(lpc.length === 5 && lpc.every((t) => t.logprob <= 0 && t.top_logprobs.length === 3 && t.top_logprobs[0].logprob >= t.logprob - 1e-6),
      `logprobs: 5 tokens, each the greedy choice with 3 alternatives: ${JSON.stringify(lpc).slice(0, 200)}`);

// ---- a seed reproduces; another seed gives another text (60 tokens at temperature 1)
const seeded = (seed) => complete("Once upon a time", { max_tokens: 60, temperature: 1, seed });
const a1 = await seeded(7), a2 = await seeded(7), b1 = await seeded(8);
eq(a2, a1, "the same seed gives the same text");
check(a1 !== b1, "another seed gives another text");
eq(a1, run(["-p", "Once upon a time", "-n", "60", "--temperature", "1", "--seed", "7"]), "seeded text = run --seed 7's");

// ---- 8 concurrent clients (4 slots: some queue), each with its own prompt, greedy and seeded
const prompts = ["Tom had a red ball", "Lily went to the park", "The sun was hot", "A big fish swam",
                 "Sam liked to run", "The cat sat on a mat", "Mia found a box", "The bird sang a song"];
const job = (i) => ({ prompt: prompts[i], max_tokens: 48, ...(i % 2 ? { temperature: 0.9, seed: 100 + i } : { temperature: 0 }) });
const single = [];
let t0 = performance.now(), tokens1 = 0;
for (let i = 0; i < prompts.length; i++) {
  const { text, usage } = await completeStream(job(i).prompt, { ...job(i), stream_options: { include_usage: true } });
  single.push(text);
  tokens1 += usage.completion_tokens;
}
const seq_s = (performance.now() - t0) / 1000;
const steps0 = await metric("thintensor_decode_steps_total"), rows0 = await metric("thintensor_decode_rows_total");
t0 = performance.now();
const together = await Promise.all(prompts.map(async (_, i) => {
  const { text, usage } = await completeStream(job(i).prompt, { ...job(i), stream_options: { include_usage: true } });
  return { text, n: usage.completion_tokens };
}));
const par_s = (performance.now() - t0) / 1000;
for (let i = 0; i < prompts.length; i++) eq(together[i].text, single[i], `concurrent client ${i} = its single-client output`);
const steps = (await metric("thintensor_decode_steps_total")) - steps0, rows = (await metric("thintensor_decode_rows_total")) - rows0;
check(rows / steps > 1.5, `concurrent decode steps were batched: ${rows} rows in ${steps} steps`);
const tokens8 = together.reduce((n, t) => n + t.n, 0);
console.log(`aggregate: 1 client ${(tokens1 / seq_s).toFixed(0)} tok/s, 8 clients (4 slots) ${(tokens8 / par_s).toFixed(0)} tok/s, ` +
            `mean batch ${(rows / steps).toFixed(2)} (HTTP and JSON included)`);

// ---- errors: OpenAI's shape, the right status, the field named
try { await new OpenAI({ baseURL: `${base}/v1`, apiKey: "wrong", maxRetries: 0 }).models.list(); check(false, "a wrong key was accepted"); }
catch (e) { eq(e.status, 401, "wrong key: status"); }
const raw = async (path, body, key = KEY) => {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" }, body });
  return { status: res.status, body: await res.json() };
};
let e = await raw("/v1/completions", '{"prompt": "Once", "max_tokens": 5');
check(e.status === 400 && /invalid JSON/.test(e.body.error.message), `malformed JSON: 400: ${JSON.stringify(e.body)}`);
e = await raw("/v1/completions", JSON.stringify({ prompt: "Once", temperature: "hot" }));
check(e.status === 400 && e.body.error.param === "temperature" && /temperature must be a number/.test(e.body.error.message),
      `wrong type: 400 naming temperature: ${JSON.stringify(e.body)}`);
e = await raw("/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: 5 }] }));
check(e.status === 400 && e.body.error.param === "messages[0].content", `wrong content type: 400 naming messages[0].content: ${JSON.stringify(e.body)}`);
e = await raw("/v1/completions", JSON.stringify({ prompt: "Once", max_tokens: 5, some_future_field: { x: 1 } }));
eq(e.status, 200, "an unknown field is ignored");
e = await raw("/v1/completions", JSON.stringify({ prompt: "Once upon a time there was a dog. ".repeat(80), max_tokens: 5 }));
check(e.status === 400 && e.body.error.code === "context_length_exceeded" && e.body.error.param === "prompt",
      `over-long context: 400 context_length_exceeded: ${JSON.stringify(e.body).slice(0, 300)}`);
e = await raw("/v1/completions", JSON.stringify({ prompt: "Once", max_tokens: 100000 }));
check(e.status === 400 && e.body.error.param === "max_tokens", `max_tokens past the context: 400: ${JSON.stringify(e.body)}`);
e = await raw("/v1/completions", JSON.stringify({ prompt: "x".repeat(70 * 1024) }));
eq(e.status, 413, "a body over --max-body");
const tk = await raw("/tokenize", JSON.stringify({ content: "Once upon a time" }));
const dt = await raw("/detokenize", JSON.stringify({ tokens: tk.body.tokens }));
eq(dt.body.content, "Once upon a time", "tokenize then detokenize");
eq((await client.models.list()).data[0].id, "ts", "/v1/models lists the model by its file name");

// ---- a bounded burst of malformed HTTP, then /health still answers
const url = new URL(base);
const junk = ["GARBAGE\r\n\r\n", "GET\r\n\r\n", "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
              "POST /v1/completions HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", `GET /${"a".repeat(20000)} HTTP/1.1\r\n\r\n`,
              `GET / HTTP/1.1\r\nX: ${"b".repeat(20000)}\r\n\r\n`, "\x00\x01\x02\xff\r\n\r\n", "GET / HTTP/9.9\r\nHost\r\n\r\n"];
await Promise.all(Array.from({ length: 48 }, (_, i) => new Promise((resolve) => {
  const sock = net.connect(Number(url.port), url.hostname, () => { sock.write(junk[i % junk.length]); setTimeout(() => sock.destroy(), 200); });
  sock.on("error", () => {}); sock.on("close", resolve); sock.on("data", () => {});
})));
const h = await fetch(`${base}/health`);
eq(h.status, 200, "/health answers after the malformed burst");

// ---- a client that disconnects mid-stream frees its slot (bounded: a story may end by itself first)
let cancelled = 0;
for (let attempt = 0; attempt < 6 && cancelled === 0; attempt++) {
  const stream = await client.completions.create({ model: "tinystories", prompt: "Once", max_tokens: 400, temperature: 2, top_k: 0, min_p: 0, seed: attempt, stream: true });
  for await (const _ of stream) { stream.controller.abort(); break; }
  for (let i = 0; i < 100 && (await metric("thintensor_slots_busy")) !== 0; i++) await new Promise((r) => setTimeout(r, 50));
  cancelled = await metric("thintensor_requests_cancelled_total");
}
check(cancelled >= 1, "a disconnect mid-stream cancels its generation (thintensor_requests_cancelled_total)");
eq(await metric("thintensor_slots_busy"), 0, "after the disconnect no slot is busy");

// ---- SIGTERM with two streams running: they end (cancelled, unless they finished first) with
// [DONE], and serve exits 0
const long = async (seed) => {
  let finish = null, n = 0;
  for await (const ch of await client.completions.create({ model: "tinystories", prompt: "Once", max_tokens: 400, temperature: 2, top_k: 0, min_p: 0, seed, stream: true })) {
    if (n++ === 0) firstChunk();
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
  }
  return finish;
};
// SIGTERM only once both streams have their first chunk: a request still on its way when the
// server stops is refused with 503 (the server is stopping), which is right but not this check.
let firstChunk;
const started = new Promise((r) => {
  let n = 0;
  firstChunk = () => { if (++n === 2) r(); };
});
const streams = Promise.all([long(1), long(2)]);
await started;
server.kill("SIGTERM");
const finishes = await streams;
check(finishes.every((f) => ["cancelled", "stop", "length"].includes(f)), `streams running at SIGTERM end properly: ${finishes}`);
const { code } = await exited;
eq(code, 0, "serve exits 0 on SIGTERM");
check(/SIGTERM: stopping/.test(log), "serve logs the SIGTERM");
check(/GET \/health 200/.test(log) && /POST \/v1\/completions 200 prompt/.test(log), "one log line per request");
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
