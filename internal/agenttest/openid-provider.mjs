// A real OpenID provider for the console's sign-in tests: node-oidc-provider, a
// certified implementation, with its development login page (any password) and
// consent page. The test gives it, in the environment, the module to load, where to
// listen, its clients, and its accounts with their groups.
import { pathToFileURL } from "node:url";

const { default: Provider } = await import(pathToFileURL(process.env.OP_MODULE).href);
const issuer = process.env.OP_ISSUER;
const accounts = JSON.parse(process.env.OP_ACCOUNTS); // {"alice@example.com": ["sre"], …}
const clients = JSON.parse(process.env.OP_CLIENTS); // [{client_id, client_secret, redirect_uris}]

const provider = new Provider(issuer, {
  clients: clients.map((c) => ({ ...c, grant_types: ["authorization_code"], response_types: ["code"] })),
  claims: { openid: ["sub"], email: ["email", "email_verified"], groups: ["groups"] },
  pkce: { required: () => true },
  cookies: { keys: ["agentmux-test-op"] },
  async findAccount(ctx, id) {
    if (!(id in accounts)) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, email: id, email_verified: true, groups: accounts[id] }) };
  },
});
provider.on("server_error", (ctx, err) => console.error("server_error", err));
const port = Number(new URL(issuer).port);
provider.listen(port, "127.0.0.1", () => console.log("openid provider listening", issuer));
