// How to start an agent confined (`sluice run`), the way the first screen
// and the Connect screen lead with: an agent Sluice starts works in a
// private copy of the repository and cannot write the person's files, where
// one they start themselves runs as their account.
import { CopyButton } from "./bits";
import { href } from "./route";

/** How to start an agent confined; the first and the Connect screens lead with it. */
export function ConfinedStart({ headingId }: { headingId: string }) {
  return (
    <>
      <h2 id={headingId}>Start an agent confined</h2>
      <p>
        In a repository folder, <code>sluice run claude</code> starts Claude Code (or <code>codex</code>,{" "}
        <code>gemini</code>, <code>copilot</code>, <code>opencode</code>, <code>qwen</code>; <code>sluice run -- COMMAND</code>{" "}
        for any other program) in a private copy of the repository, with no access to your credentials or Sluice&apos;s
        files. It changes your repository only by proposals you approve here, and its session shows on the{" "}
        <a href={href("sessions")}>Sessions</a> screen.
      </p>
      <div className="preview">
        <pre>
          <code>sluice run claude</code>
        </pre>
        <CopyButton text="sluice run claude" label="Copy the command" />
      </div>
      <p className="unconfined-note">
        The configuration below connects an agent you start yourself instead. That agent runs as your account: it could
        write to your repositories without asking, and Sluice sees only what it chooses to propose.
      </p>
    </>
  );
}
