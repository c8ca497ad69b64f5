// The settings screen's choice of the image workspaces run on: the Docker
// Engine's local images, the pinned one marked. Choosing one pins its ID
// in config.json, where the app and every sidecar an agent starts find it.
import { useCallback, useEffect, useState } from "react";
import { api, ApiError, type WorkspaceImages } from "./api";
import { ErrorBox, errorMessage } from "./bits";

function short(id: string): string {
  return id.startsWith("sha256:") ? id.slice(0, 19) : id;
}

export function WorkspaceImagePicker() {
  const [view, setView] = useState<WorkspaceImages | null>(null);
  const [choice, setChoice] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    try {
      const v = await api.workspaceImages();
      setView(v);
      setChoice(v.pinned);
    } catch (e) {
      // Not being able to list images (no Docker Engine, say) is a fact
      // about this machine, not a failure of the settings form.
      setUnavailable(e instanceof ApiError ? e.message : errorMessage(e));
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  async function use() {
    setBusy(true);
    setError(null);
    try {
      const v = await api.useWorkspaceImage(choice);
      setView(v);
      setChoice(v.pinned);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel workspace-image" aria-labelledby="workspace-image-title">
      <h2 id="workspace-image-title">Workspace image</h2>
      <p className="muted">
        The container image agents' workspaces run on, pinned by its ID so that a tag moving later changes nothing.
        From a terminal: <code>sluice workspace image use NAME[:TAG]</code>, or <code>pull NAME@sha256:DIGEST</code>.
      </p>
      {unavailable && <p role="status">Images cannot be listed: {unavailable}</p>}
      {view && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void use();
          }}
        >
          <label className="field">
            <span>Image</span>
            <select name="workspaceImage" value={choice} onChange={(e) => setChoice(e.target.value)}>
              {!view.pinned && <option value="">none (workspaces are off)</option>}
              {view.images.map((im) => (
                <option key={im.id} value={im.id}>
                  {[...im.tags, ...im.digests].join(", ") || "(no name)"} · {short(im.id)}
                  {im.inUse ? " · in use" : ""}
                </option>
              ))}
            </select>
          </label>
          <div className="actions">
            <button type="submit" className="use-image" disabled={busy || !choice || choice === view.pinned}>
              {busy ? "Pinning…" : "Use this image"}
            </button>
          </div>
          {view.pinned && (
            <p className="muted pinned-image">
              Pinned: <code>{view.pinned}</code>
            </p>
          )}
          {view.restartRequired && (
            <p className="note" role="status">
              Restart Sluice and your agents' MCP servers for them to use the pinned image.
            </p>
          )}
          {view.overriddenByEnv && (
            <p className="note">SLUICE_WORKSPACE_IMAGE is set for this app and overrides the pinned image.</p>
          )}
        </form>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
    </section>
  );
}
