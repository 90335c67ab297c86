/** The dashboard's entry: read the API's dashboard config, then show the login form or the page the URL names. */
import { render, type ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { loadConfig } from './config.js';
import { config, session } from './session.js';
import { match, navigate, route } from './router.js';
import { Layout } from './components/layout.js';
import { Notice } from './components/notice.js';
import { Login } from './pages/login.js';
import { LoadBalancers } from './pages/loadbalancers.js';
import { LoadBalancerPage } from './pages/loadbalancer.js';
import { CreateLoadBalancer } from './pages/create.js';
import { EditResource, NewResource } from './pages/resource-form.js';
import { Amphorae } from './pages/amphorae.js';
import { Failovers } from './pages/failovers.js';
import { Certificates } from './pages/certificates.js';
import { Quotas } from './pages/quotas.js';
import { Operator } from './pages/operator.js';

/** Each page and the fragment path it answers; the first match wins. */
const ROUTES: Array<[pattern: string, page: ComponentType<{ params: Record<string, string> }>]> = [
  ['/loadbalancers', LoadBalancers],
  ['/loadbalancers/:id', LoadBalancerPage],
  ['/create', CreateLoadBalancer],
  ['/new/:kind', NewResource],
  ['/edit/:kind/:id', EditResource],
  ['/amphorae', Amphorae],
  ['/failovers', Failovers],
  ['/certificates', Certificates],
  ['/quotas', Quotas],
  ['/operator', Operator],
];

function Page() {
  const path = route.value.path;
  for (const [pattern, Component] of ROUTES) {
    const params = match(pattern, path);
    if (params) return <Component params={params} />;
  }
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <a href="#/loadbalancers">Load balancers</a>
      </p>
    </section>
  );
}

function App() {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    loadConfig().then(
      (c) => (config.value = c),
      (e: Error) => setError(e.message),
    );
  }, []);
  useEffect(() => {
    if (session.value && (route.value.path === '/' || route.value.path === '')) navigate('/loadbalancers');
  }, [session.value, route.value.path]);
  if (error) return <Notice>{error}</Notice>;
  if (!config.value) return <p class="muted">Loading…</p>;
  if (!session.value) return <Login />;
  return (
    <Layout>
      <Page />
    </Layout>
  );
}

render(<App />, document.getElementById('app')!);
