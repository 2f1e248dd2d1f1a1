// A TypeScript middleware agent that speaks the agentmux native protocol (dialect
// "ndjson"), using only node:readline. Build it with `npm install && npm run build`
// here; examples/typescript.toml runs dist/worker.js.
import * as readline from "node:readline";

type Msg = { type: string; [k: string]: unknown };

const waiting = new Map<string, (m: Msg) => void>();
let params: Record<string, unknown> = {};
let queue: Promise<void> = Promise.resolve();

function send(msg: Msg): void {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function ask(msg: Msg & { id: string }): Promise<Msg> {
  return new Promise((resolve) => {
    waiting.set(msg.id, resolve);
    send(msg);
  });
}

async function session(prompt: string): Promise<void> {
  send({ type: "progress", message: "planning: " + prompt, percent: 10 });
  const q = await ask({ type: "question", id: "q1", question: "Which test framework?", kind: "select", options: ["vitest", "jest"] });
  const a = await ask({ type: "approval", id: "a1", description: "write test/app.test.ts" });
  send({ type: "result", text: "implemented " + prompt, framework: q.value, framework_outcome: q.outcome, approved: a.value === "yes", model: params.model });
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line) as Msg;
  switch (msg.type) {
    case "init":
      params = (msg.params as Record<string, unknown>) ?? {};
      send({ type: "init_ack", version: "ts-worker/1", capabilities: [] });
      break;
    case "prompt":
      queue = queue.then(() => session(String(msg.text)));
      break;
    case "response": {
      const resolve = waiting.get(String(msg.id));
      waiting.delete(String(msg.id));
      resolve?.(msg);
      break;
    }
  }
});
rl.on("close", () => process.exit(0));
