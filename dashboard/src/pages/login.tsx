/** Log in with the Keystone the service uses: user, password, project (optional: the user's first). */
import { useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { config, endedBecause, login, LoginError } from '../session.js';
import { Field } from '../components/field.js';
import { Notice } from '../components/notice.js';

export function Login() {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [project, setProject] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const mode = config.value?.identityMode;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await login(user, password, project);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? `Keystone refused the user name or password (${err.message})` : err instanceof ApiError || err instanceof LoginError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login" id="main">
      <h1>Ostia</h1>
      <p class="muted">Load balancers, through the same Octavia, Barbican and Keystone APIs the openstack CLI uses.</p>
      {mode === 'noauth' || mode === 'testing' ? (
        <Notice kind="warning">This API runs with identity.mode {mode}: there is no Keystone to log in to. Use identity.mode embedded or external to use the dashboard.</Notice>
      ) : null}
      <Notice kind="warning">{endedBecause.value}</Notice>
      <form onSubmit={submit} class="card">
        <Field id="login-user" label="User">
          <input id="login-user" name="username" autocomplete="username" required value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
        </Field>
        <Field id="login-password" label="Password">
          <input id="login-password" name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </Field>
        <Field id="login-project" label="Project" hint="Empty: your first project">
          <input id="login-project" name="project" value={project} onInput={(e) => setProject((e.target as HTMLInputElement).value)} />
        </Field>
        <Notice>{error}</Notice>
        <button type="submit" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
