// The login page: a read credential, cluster and secret (sent as Basic) or a token (Bearer), tried
// against the API before it is kept (sessionStorage: this tab only).
import { useState } from "preact/hooks";
import { Credential, getJson, saveCredential } from "../api";

export function Login({ onDone, reason }: { onDone: () => void; reason?: string }) {
  const [kind, setKind] = useState<"basic" | "bearer">("basic");
  const [error, setError] = useState("");
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const c: Credential = kind === "basic"
      ? { kind, user: String(f.get("user") ?? "").trim(), secret: String(f.get("secret") ?? "") }
      : { kind, token: String(f.get("token") ?? "").trim() };
    try {
      await getJson("/api/v1/clusters", c);
      saveCredential(c);
      setError("");
      onDone();
    } catch (err: any) {
      setError(err?.status === 401 ? "The credential was refused." : String(err?.message ?? err));
    }
  };
  return (
    <main class="login">
      <h1>fjord</h1>
      {reason && <p class="error" role="alert" id="login-reason">{reason}</p>}
      <form onSubmit={submit} aria-label="login">
        <fieldset>
          <legend>Credential</legend>
          <label><input type="radio" name="kind" checked={kind === "basic"} onChange={() => setKind("basic")} /> Cluster (or reader) and secret</label>
          <label><input type="radio" name="kind" checked={kind === "bearer"} onChange={() => setKind("bearer")} /> Token</label>
        </fieldset>
        {kind === "basic" ? (
          <>
            <label>Name <input name="user" autocomplete="username" required placeholder="reader" /></label>
            <label>Secret <input name="secret" type="password" autocomplete="current-password" required /></label>
          </>
        ) : (
          <label>Token <input name="token" type="password" required /></label>
        )}
        <button type="submit">Sign in</button>
        {error && <p class="error" role="alert">{error}</p>}
        <p class="muted">A read-only credential (<code>fjord token add reader --read-only</code>) is enough. It is
          kept in this tab only, until you close it or choose “Forget credential”.</p>
      </form>
    </main>
  );
}
