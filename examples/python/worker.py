#!/usr/bin/env python3
"""A middleware agent that speaks the agentmux native protocol (dialect "ndjson").

It reads init params, then serves sessions one after another: for each prompt it
reports progress, asks a question and an approval, and returns a result that says
what it was answered. Run it under agentmux with examples/worker.toml.
"""
import json
import sys


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)  # the runtime closed stdin: we are done
    return json.loads(line)


def wait_for(request_id):
    """Reads lines until the response to request_id; other lines are set aside."""
    while True:
        msg = read()
        if msg.get("type") == "response" and msg.get("id") == request_id:
            return msg
        if msg.get("type") == "interrupt":
            raise KeyboardInterrupt(msg.get("reason", "interrupted"))


def session(prompt, params):
    send({"type": "progress", "message": "planning: " + prompt, "percent": 10})
    send({"type": "partial", "text": "Model %s. " % params.get("model", "?")})
    send({"type": "question", "id": "q1", "question": "Which auth token signing algorithm?",
          "context": "the API gateway"})
    algo = wait_for("q1")
    send({"type": "approval", "id": "a1", "description": "write src/auth.py", "risk_level": "low"})
    ok = wait_for("a1")
    send({"type": "progress", "message": "done", "percent": 100})
    send({"type": "result", "text": "implemented " + prompt,
          "algorithm": algo["value"], "algorithm_outcome": algo["outcome"],
          "approved": ok["value"] == "yes"})


def main():
    params = {}
    while True:
        msg = read()
        kind = msg.get("type")
        if kind == "init":
            params = msg.get("params", {})
            send({"type": "init_ack", "version": "worker/1", "capabilities": ["interrupt"]})
        elif kind == "prompt":
            try:
                session(msg.get("text", ""), params)
            except KeyboardInterrupt as stop:
                send({"type": "error", "message": "interrupted: %s" % stop})


if __name__ == "__main__":
    main()
