/** Who is calling, as the identity layer established it from the token. */
export interface RequestContext {
  readonly userId: string | null;
  readonly userName: string | null;
  /** null for an unscoped token: Octavia refuses those with 403. */
  readonly projectId: string | null;
  readonly roles: readonly string[];
  /** true under noauth, where Octavia treats every caller as admin. */
  readonly isAdmin: boolean;
}
