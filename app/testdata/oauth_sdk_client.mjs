// A remote connector made of the official TypeScript SDK's OAuth client,
// for app/remote_sdk_e2e_test.go. It discovers Sluice's authorization
// server from a 401, registers (a client ID metadata document when
// CLIENT_ID_URL is set, dynamic registration otherwise), prints the
// authorization URL for the person's browser, reads the code the browser
// brought back from stdin, and then reads, proposes and waits like an
// agent. Each step is one line on stdout for the test to follow.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const env = (k) => {
  const v = process.env[k];
  if (!v && k !== "CLIENT_ID_URL") throw new Error(`${k} is not set`);
  return v;
};
const sdk = (p) => import(pathToFileURL(`${env("TOOLS_DIR")}/node_modules/@modelcontextprotocol/sdk/dist/esm/${p}`).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { UnauthorizedError } = await sdk("client/auth.js");

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const redirect = env("REDIRECT");
let info;
let tokens;
let verifier;
const provider = {
  get redirectUrl() {
    return redirect;
  },
  clientMetadataUrl: process.env.CLIENT_ID_URL || undefined,
  get clientMetadata() {
    return {
      client_name: "SDK Test Client",
      redirect_uris: [redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => {
    info = i;
  },
  tokens: () => tokens,
  saveTokens: (t) => {
    tokens = t;
  },
  redirectToAuthorization: (u) => console.log(`AUTHORIZE ${u.href}`),
  saveCodeVerifier: (v) => {
    verifier = v;
  },
  codeVerifier: () => verifier,
};

const url = new URL(env("MCP_URL"));
let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
try {
  await new Client({ name: "sdk-oauth-e2e", version: "1" }).connect(transport);
  throw new Error("connected without authorization");
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
const { value: code } = await lines.next();
await transport.finishAuth(code.trim());
console.log(`TOKEN ${tokens.scope ?? ""}`);
console.log(`CLIENT ${info.client_id}`);

transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
const client = new Client({ name: "sdk-oauth-e2e", version: "1" });
await client.connect(transport);
const repo = env("REPO");
const brief = await client.callTool({ name: "repo_brief", arguments: { repoPath: repo } });
if (brief.isError) throw new Error(`repo_brief: ${JSON.stringify(brief.content)}`);
console.log("BRIEF ok");
const proposed = await client.callTool({
  name: "propose_commit",
  arguments: { repoPath: repo, reason: "Greet from a connector", message: "Greet from a connector", paths: ["README.md"] },
});
if (proposed.isError) throw new Error(`propose_commit: ${JSON.stringify(proposed.content)}`);
console.log(`PROPOSED ${proposed.structuredContent.proposalId}`);
const waited = await client.callTool(
  { name: "proposal_wait", arguments: { proposalId: proposed.structuredContent.proposalId, timeoutSeconds: 50 } },
  undefined,
  { timeout: 120000, resetTimeoutOnProgress: true },
);
console.log(`WAITED ${waited.structuredContent.status}`);
await client.close();
process.exit(0);
