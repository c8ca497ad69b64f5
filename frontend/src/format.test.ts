import { describe, expect, it } from "vitest";
import { agentLabel } from "./format";

describe("agentLabel", () => {
  it("reads a remote connector's identity as a person says it", () => {
    expect(agentLabel("ChatGPT:connector-granted-5-Dec")).toBe("ChatGPT, connector granted 5 Dec");
    expect(agentLabel("SDK-Test-Client:connector-granted-12-Jan")).toBe("SDK Test Client, connector granted 12 Jan");
  });
  it("leaves every other agent name as it is", () => {
    for (const a of ["claude-code", "codex:session-1", "x:connector-granted-", "connector-granted-5-Dec"]) {
      expect(agentLabel(a)).toBe(a);
    }
  });
});
