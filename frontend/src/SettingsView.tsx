// The app's settings as a form. The Go side validates and saves them and
// says which ones only take effect after a restart.
import { useEffect, useState } from "react";
import { api, type Settings, type SettingsInput } from "./api";
import { ErrorBox, errorMessage } from "./bits";
import { WorkspaceImagePicker } from "./WorkspaceImagePicker";
import { ConnectorsList } from "./ConsentView";
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

// How long a proposal may wait for a decision: Go's config accepts 1m to
// 168h; these are the choices a person makes, a day by default.
export const expiryChoices: { value: string; label: string }[] = [
  { value: "15m", label: "15 minutes" },
  { value: "1h", label: "1 hour" },
  { value: "4h", label: "4 hours" },
  { value: "24h", label: "1 day" },
  { value: "72h", label: "3 days" },
  { value: "168h", label: "7 days" },
];

// seconds reads a Go duration ("24h0m0s", "1h30m", "90s") as seconds, or
// NaN when it is not one.
function seconds(d: string): number {
  const t = d.trim();
  if (!durationRe.test(t)) return NaN;
  const unit: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) total += parseFloat(m[1]) * unit[m[2]];
  return total;
}

// expiryValue is the choice that means the same as a saved duration ("24h0m0s"
// is "24h"), or the duration as it is when no choice does (written by hand).
function expiryValue(d: string): string {
  const c = expiryChoices.find((c) => seconds(c.value) === seconds(d));
  return c ? c.value : d;
}

function toForm(s: Settings): Form {
  return {
    roots: (s.allowedRoots ?? []).join("\n"),
    pendingExpiry: expiryValue(s.pendingExpiry ?? ""),
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
  const expirySecs = seconds(form.pendingExpiry);
  const expiryOk = expirySecs >= 60 && expirySecs <= 168 * 3600;
  const savedExpiry = expiryValue(settings.pendingExpiry ?? "");
  const choices = expiryChoices.some((c) => c.value === savedExpiry)
    ? expiryChoices
    : [...expiryChoices, { value: savedExpiry, label: `${savedExpiry} (from config.json)` }];
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
          <select
            name="pendingExpiry"
            value={form.pendingExpiry}
            onChange={(e) => set({ pendingExpiry: e.target.value })}
            aria-invalid={!expiryOk}
            aria-describedby="expiry-help"
          >
            {choices.map((c) => (
              <option key={c.value} value={c.value}>
                {c.label}
              </option>
            ))}
          </select>
          <small id="expiry-help" className={expiryOk ? "muted" : "invalid"}>
            How long a proposal waits for your decision before it expires, up to 7 days.
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
      <ConnectorsList />
    </section>
  );
}
