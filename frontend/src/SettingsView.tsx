// The app's settings as a form. The Go side validates and saves them and
// says which ones only take effect after a restart.
import { useEffect, useState } from "react";
import { api, type Settings, type SettingsInput } from "./api";
import { ErrorBox, errorMessage } from "./bits";
import { WorkspaceImagePicker } from "./WorkspaceImagePicker";
import { WorkspaceRuntimePicker } from "./WorkspaceRuntimePicker";

const labels: Record<string, string> = {
  allowedRoots: "Allowed roots",
  pendingExpiry: "Pending expiry",
  policyFile: "Policy file",
  toolsets: "Toolsets",
  notifications: "Notifications",
};

interface Form {
  roots: string;
  pendingExpiry: string;
  policyFile: string;
  toolsets: string[];
  notifications: boolean;
}

function toForm(s: Settings): Form {
  return {
    roots: (s.allowedRoots ?? []).join("\n"),
    pendingExpiry: s.pendingExpiry ?? "",
    policyFile: s.policyFile ?? "",
    toolsets: s.toolsets ?? [],
    notifications: !!s.notifications,
  };
}

function toInput(f: Form): SettingsInput {
  return {
    allowedRoots: f.roots
      .split("\n")
      .map((r) => r.trim())
      .filter(Boolean),
    pendingExpiry: f.pendingExpiry.trim(),
    policyFile: f.policyFile.trim(),
    toolsets: f.toolsets,
    notifications: f.notifications,
  };
}

// Go's time.ParseDuration forms that make sense here: "15m", "1h30m", "90s".
const durationRe = /^(\d+(\.\d+)?(h|m|s|ms))+$/;

export function SettingsView() {
  const [settings, setSettings] = useState<Settings | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);

  useEffect(() => {
    api.settings().then(
      (s) => {
        setSettings(s);
        setForm(toForm(s));
      },
      (e) => setError(errorMessage(e)),
    );
  }, []);

  if (!form || !settings) {
    return (
      <section aria-labelledby="settings-title">
        <h1 id="settings-title">Settings</h1>
        {error ? <ErrorBox>{error}</ErrorBox> : <p className="muted">Loading…</p>}
      </section>
    );
  }

  const dirty = JSON.stringify(toInput(form)) !== JSON.stringify(toInput(toForm(settings)));
  const expiryOk = durationRe.test(form.pendingExpiry.trim());
  const restart = new Set(settings.restartRequired ?? []);
  const set = (patch: Partial<Form>) => {
    setForm({ ...form, ...patch });
    setSaved(false);
  };

  async function save() {
    if (!form) return;
    setSaving(true);
    setError(null);
    try {
      const s = await api.saveSettings(toInput(form));
      setSettings(s);
      setForm(toForm(s));
      setSaved(true);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setSaving(false);
    }
  }

  const needsRestart = (key: string) =>
    restart.has(key) ? (
      <span className="badge warn" title="Takes effect after Sluice restarts">
        restart needed
      </span>
    ) : null;

  return (
    <section aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      <form
        className="settings"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label className="field">
          <span>
            {labels.allowedRoots} {needsRestart("allowedRoots")}
          </span>
          <textarea
            name="allowedRoots"
            rows={4}
            value={form.roots}
            spellCheck={false}
            onChange={(e) => set({ roots: e.target.value })}
            aria-describedby="roots-help"
          />
          <small id="roots-help" className="muted">
            Folders that hold repositories agents may work in, one absolute path per line.
          </small>
        </label>
        <label className="field">
          <span>
            {labels.pendingExpiry} {needsRestart("pendingExpiry")}
          </span>
          <input
            name="pendingExpiry"
            value={form.pendingExpiry}
            onChange={(e) => set({ pendingExpiry: e.target.value })}
            aria-invalid={!expiryOk}
            aria-describedby="expiry-help"
          />
          <small id="expiry-help" className={expiryOk ? "muted" : "invalid"}>
            How long a proposal waits for a decision before it expires, e.g. 15m or 1h.
          </small>
        </label>
        <label className="field">
          <span>
            {labels.policyFile} {needsRestart("policyFile")}
          </span>
          <input
            name="policyFile"
            value={form.policyFile}
            spellCheck={false}
            placeholder="none"
            onChange={(e) => set({ policyFile: e.target.value })}
            aria-describedby="policy-help"
          />
          <small id="policy-help" className="muted">
            Per-agent rules and auto-approvals (policy.json). A policy file that is set but missing or malformed stops
            Sluice from starting.
          </small>
        </label>
        <fieldset className="field">
          <legend>
            {labels.toolsets}
          </legend>
          <div className="checks">
            {settings.availableToolsets.map((t) => (
              <label key={t} className="check">
                <input
                  type="checkbox"
                  name="toolsets"
                  value={t}
                  checked={form.toolsets.includes(t)}
                  onChange={(e) =>
                    set({
                      toolsets: e.target.checked
                        ? settings.availableToolsets.filter((x) => x === t || form.toolsets.includes(x))
                        : form.toolsets.filter((x) => x !== t),
                    })
                  }
                />
                {t}
              </label>
            ))}
          </div>
          <small className="muted">The tools agents see by default.</small>
        </fieldset>
        <label className="check">
          <input
            type="checkbox"
            name="notifications"
            checked={form.notifications}
            onChange={(e) => set({ notifications: e.target.checked })}
          />
          Desktop notification for each new proposal
        </label>
        {error && <ErrorBox>{error}</ErrorBox>}
        <div className="actions">
          <button type="submit" className="primary save-settings" disabled={!dirty || !expiryOk || saving}>
            {saving ? "Saving…" : "Save"}
          </button>
          {dirty && (
            <button type="button" onClick={() => setForm(toForm(settings))} disabled={saving}>
              Discard changes
            </button>
          )}
        </div>
        {saved && (
          <div className="panel ok settings-saved" role="status">
            Saved.
            {restart.size > 0 && (
              <>
                {" "}
                Restart Sluice for these to take effect: {[...restart].map((k) => labels[k] ?? k).join(", ")}.
              </>
            )}
          </div>
        )}
        {!saved && restart.size > 0 && (
          <p className="note">
            Waiting for a restart: {[...restart].map((k) => labels[k] ?? k).join(", ")}.
          </p>
        )}
      </form>
      <WorkspaceImagePicker />
      <WorkspaceRuntimePicker />
    </section>
  );
}
