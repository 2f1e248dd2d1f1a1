// The Restate side of loadgen's Restate peer: a session is a virtual object, and each
// of its requests an awakeable that a rule service resolves. The answer is kept in the
// session's state, which is what makes it durable, as agentmux's audit record is.
//
//	node service.mjs <port>
//
// It prints "listening <port>" once it serves.
import * as restate from "@restatedev/restate-sdk";

// rule is the decision: approvals are allowed, questions answered "unit", as B1's
// responder and the node's static supervisor in loadgen's scenario answer them.
const rule = (q) => (q.type === "approval" ? "yes" : "unit");

const rules = restate.service({
  name: "rules",
  handlers: {
    decide: async (ctx, req) => {
      ctx.resolveAwakeable(req.awakeable, rule(req.request));
    },
  },
});

const session = restate.object({
  name: "session",
  handlers: {
    begin: async (ctx) => {
      ctx.set("began", true);
    },
    // ask answers one request: a fallback (a question nobody answers, by its timeout)
    // is kept as it is; any other is decided by the rule service.
    ask: async (ctx, req) => {
      let answer = req.fallback;
      if (answer === undefined || answer === null) {
        const { id, promise } = ctx.awakeable();
        ctx.serviceSendClient(rules).decide({ awakeable: id, request: req });
        answer = await promise;
      }
      ctx.set("r" + req.id, answer);
      return answer;
    },
    end: async (ctx, outcome) => {
      ctx.set("ended", outcome ?? "ok");
    },
  },
});

const port = Number(process.argv[2] ?? 9080);
const bound = await restate.serve({ services: [rules, session], port });
console.log(`listening ${bound}`);
