// The Node.js baseline: what a team writes by hand instead of agentmux. It spawns the
// scripted agents with child_process, reads their stdout with readline, parses each
// line with JSON.parse and answers questions inline. Config: JSON in argv[2]
// ({command, args, sessions, rate, prompt}); report: JSON on stdout.
import { spawn } from 'node:child_process';
import readline from 'node:readline';

const cfg = JSON.parse(process.argv[2]);
const reports = [];
const failures = [];
let done = 0;

function session(i) {
  const child = spawn(cfg.command, cfg.args, { stdio: ['pipe', 'pipe', 'ignore'] });
  const write = (obj) => child.stdin.write(JSON.stringify(obj) + '\n');
  let finished = false;
  const finish = (err, report) => {
    if (finished) return;
    finished = true;
    if (err) failures.push(String(err));
    else reports.push(report);
    child.stdin.end();
    if (++done === cfg.sessions) {
      const cpu = process.cpuUsage();
      process.stdout.write(JSON.stringify({ reports, failures, cpu_s: (cpu.user + cpu.system) / 1e6 }) + '\n');
    }
  };
  child.on('error', (err) => finish(err));
  child.on('exit', (code) => { if (!finished) finish(new Error(`agent exited with ${code} before its result`)); });
  const rl = readline.createInterface({ input: child.stdout });
  rl.on('line', (line) => {
    let m;
    try { m = JSON.parse(line); } catch { return; }
    switch (m.type) {
      case 'question':
      case 'approval': {
        const value = m.type === 'approval' ? 'yes' : 'unit';
        const resp = { type: 'response', in_reply_to: m.type, id: m.id, answer_to: m.id, value, outcome: 'answered' };
        if (m.timeout_ms) {
          setTimeout(() => write({ ...resp, value: 'skip', outcome: 'timed_out' }), m.timeout_ms);
        } else {
          write(resp);
        }
        break;
      }
      case 'result':
        if (m.load) m.load.received_ns = Date.now() * 1e6;
        finish(null, m.load);
        break;
      case 'error':
        finish(new Error(m.message));
        break;
    }
  });
  write({ type: 'prompt', text: cfg.prompt, session: `n-${i}` });
}

const t0 = Date.now();
for (let i = 0; i < cfg.sessions; i++) {
  const at = cfg.rate > 0 ? t0 + (i * 1000) / cfg.rate : t0;
  setTimeout(() => session(i), Math.max(0, at - Date.now()));
}
