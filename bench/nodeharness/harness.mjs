// The Node.js baseline: what a team writes by hand instead of agentmux, doing the same
// work with nats.js. It spawns the scripted agents with child_process, reads their
// stdout with readline and JSON.parse, and for each session:
//   - publishes every message on agentmux.evt.<host>.<session>.<type>, and the
//     session.started, request.answered and session.ended events;
//   - asks a supervisor over NATS for each question and approval (a request with the
//     same JSON body as agentmux's ask, bounded by the request's deadline), or answers
//     a question nobody routes with its default when its timeout fires;
//   - writes the audit records agentmux writes (session.started, request, answer,
//     session.ended) to JetStream, each with a Nats-Msg-Id so the stream keeps it once,
//     acknowledged asynchronously and waited for before the report; as agentmux does,
//     a request answered within 50 ms has one record, its answer carrying the request.
// Config: JSON in argv[2] ({command, args, sessions, rate, prompt, nats, user, pass, ask, audit});
// report: JSON on stdout. Its modules come from package.json here (npm ci).
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';

const cfg = JSON.parse(process.argv[2]);
const host = 'load';
const nc = await connect({ servers: cfg.nats, name: 'node-harness', user: cfg.user || undefined, pass: cfg.pass || undefined });
const js = jetstream(nc);
const acks = new Set(); // audit publishes not yet acknowledged
let auditFailures = 0;
const reports = [];
const failures = [];
let done = 0;

function audit(session, what, rec) {
  const data = JSON.stringify({ time: Date.now(), node: 'node-harness', host, session, attempt: 0, ...rec });
  const p = js.publish(`${cfg.audit}.${host}.${session}`, data, { msgID: `${session}.0.${what}` });
  acks.add(p);
  p.then(() => acks.delete(p), () => { acks.delete(p); auditFailures++; });
}

function event(session, type, data) {
  nc.publish(`agentmux.evt.${host}.${session}.${type}`, data, { reply: 'agentmux.event' }); // as a node marks its events
}

async function finishAll() {
  while (acks.size > 0) await Promise.allSettled([...acks]);
  await nc.drain();
  const cpu = process.cpuUsage();
  process.stdout.write(JSON.stringify({ reports, failures, audit_failures: auditFailures, cpu_s: (cpu.user + cpu.system) / 1e6 }) + '\n');
}

function session(i) {
  const sid = `n-${i}`;
  const started = Date.now();
  const child = spawn(cfg.command, cfg.args, { stdio: ['pipe', 'pipe', 'ignore'] });
  const write = (obj) => { if (!finished) child.stdin.write(JSON.stringify(obj) + '\n'); };
  let finished = false;
  let requests = 0;
  const finish = (err, report) => {
    if (finished) return;
    finished = true;
    const outcome = err ? 'error' : 'ok';
    event(sid, 'session.ended', JSON.stringify({ session: sid, host, outcome, error: err ? String(err) : undefined, duration_ms: Date.now() - started }));
    audit(sid, 'session.ended', { kind: 'session.ended', outcome, reason: err ? String(err) : undefined });
    if (err) failures.push(String(err));
    else reports.push(report);
    child.stdin.end();
    if (++done === cfg.sessions) finishAll();
  };
  const answered = (m, id, rec, readAt, text, held, value, outcome, decider) => {
    write({ type: 'response', in_reply_to: m.type, id, value, outcome });
    const latency = Date.now() - readAt;
    event(sid, 'request.answered', JSON.stringify({ id, type: m.type, value, outcome, decider, latency_ms: latency }));
    const answer = { kind: 'answer', request: id, type: m.type, value, outcome, decider, latency_ms: latency };
    if (held.timer) { // still held: this record stands for the request too
      clearTimeout(held.timer);
      Object.assign(answer, { text, asked: readAt });
    }
    audit(sid, `${rec}.answer`, answer);
  };
  const request = (m, raw) => {
    const readAt = Date.now();
    const id = m.id || `${m.type}-${requests + 1}`;
    const rec = `r${++requests}`;
    const text = m.type === 'approval' ? m.description ?? m.tool : m.question;
    const held = {};
    held.timer = setTimeout(() => {
      held.timer = null;
      audit(sid, `${rec}.request`, { kind: 'request', request: id, type: m.type, text });
    }, 50);
    const def = m.type === 'approval' ? 'no' : (m.default ?? 'skip');
    if (m.timeout_ms) { // nobody answers it: the default at the deadline
      setTimeout(() => answered(m, id, rec, readAt, text, held, def, 'timed_out', 'default'), m.timeout_ms);
      return;
    }
    const deadline = readAt + cfg.question_timeout_ms;
    const ask = JSON.stringify({ session: sid, host, type: m.type, id, text, deadline, default: def, request: JSON.parse(raw), node: 'node-harness', attempt: 0 });
    nc.request(cfg.ask, ask, { timeout: cfg.question_timeout_ms }).then(
      (reply) => answered(m, id, rec, readAt, text, held, JSON.parse(reply.string()), 'answered', 'supervisor'),
      () => answered(m, id, rec, readAt, text, held, def, 'timed_out', 'default'));
  };
  child.on('error', (err) => finish(err));
  child.on('exit', (code) => { if (!finished) finish(new Error(`agent exited with ${code} before its result`)); });
  event(sid, 'session.started', JSON.stringify({ session: sid, host, node: 'node-harness', attempt: 0 }));
  audit(sid, 'session.started', { kind: 'session.started', text: cfg.prompt });
  const rl = readline.createInterface({ input: child.stdout });
  rl.on('line', (line) => {
    let m;
    try { m = JSON.parse(line); } catch { return; }
    event(sid, m.type, line);
    switch (m.type) {
      case 'question':
      case 'approval':
        request(m, line);
        break;
      case 'result':
        if (m.load) m.load.received_ns = Date.now() * 1e6;
        finish(null, m.load);
        break;
      case 'error':
        finish(new Error(m.message));
        break;
    }
  });
  write({ type: 'prompt', text: cfg.prompt, session: sid });
}

const t0 = Date.now();
for (let i = 0; i < cfg.sessions; i++) {
  const at = cfg.rate > 0 ? t0 + (i * 1000) / cfg.rate : t0;
  setTimeout(() => session(i), Math.max(0, at - Date.now()));
}
