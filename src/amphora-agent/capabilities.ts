/**
 * The agent of a netns amphora holds capabilities over its namespace's network (keepalived needs them,
 * the UDP listeners' rules too); HAProxy, which handles tenant traffic, must hold none. Processes the
 * agent starts inherit its ambient set, so HAProxy is started through setpriv, which clears the
 * inheritable and ambient sets before it runs: an unprivileged uid then execs HAProxy with no permitted
 * or effective capability. (The bounding set cannot be cleared without CAP_SETPCAP; with no-new-privs
 * and no file capabilities it grants nothing.)
 */
import { readFileSync } from 'node:fs';

const SETPRIV = '/usr/bin/setpriv';

/** True when this process holds a capability, effective or ambient. */
export function holdsCapabilities(status = readFileSync('/proc/self/status', 'utf8')): boolean {
  return ['CapEff', 'CapAmb'].some((set) => /[1-9a-f]/i.test(status.match(new RegExp(`^${set}:\\s+([0-9a-f]+)`, 'm'))?.[1] ?? ''));
}

/** The command prefix that starts a program without this process's capabilities (none when it holds none). */
export function withoutCapabilities(): readonly string[] {
  return holdsCapabilities() ? [SETPRIV, '--inh-caps=-all', '--ambient-caps=-all', '--'] : [];
}
