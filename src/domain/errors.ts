/**
 * The one error catalog. Every failure a caller can see has a stable code, an HTTP
 * status and a message template whose wording follows Octavia's, because clients
 * print (and some tools match) the faultstring verbatim.
 */

export type ErrorFormat = 'wsme' | 'pecan';

interface CatalogEntry {
  readonly status: number;
  readonly template: string;
  /** Octavia renders routing-level errors (unknown URL, missing parent) in pecan's shape. */
  readonly format?: ErrorFormat;
}

export const errorCatalog = {
  NOT_FOUND: { status: 404, template: '%s %s not found.' },
  PARENT_NOT_FOUND: { status: 404, template: '%s %s not found.', format: 'pecan' },
  ROUTE_NOT_FOUND: { status: 404, template: 'The resource could not be found.', format: 'pecan' },
  METHOD_NOT_ALLOWED: { status: 405, template: 'The method specified is not allowed for this resource.', format: 'pecan' },
  NOT_ACCEPTABLE: { status: 406, template: 'Only content type application/json is accepted.', format: 'pecan' },
  BODY_TOO_LARGE: { status: 413, template: 'Request is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, template: 'Unknown mimetype: %s' },
  INVALID_JSON: { status: 400, template: 'Request is not in valid JSON format' },
  BODY_TOO_DEEP: { status: 400, template: 'Request body nests deeper than %s levels' },
  INVALID_INPUT: { status: 400, template: "Invalid input for field/attribute %s. Value: '%s'. %s" },
  UNKNOWN_ATTRIBUTE: { status: 400, template: 'Unknown attribute for argument %s: %s' },
  UNKNOWN_ATTRIBUTES: { status: 400, template: 'Unknown attributes for argument %s: %s' },
  VALIDATION: { status: 400, template: 'Validation failure: %s' },
  INVALID_OPTION: { status: 400, template: '%s is not a valid option for %s' },
  DISABLED_OPTION: { status: 400, template: 'The selected %s is not allowed in this deployment: %s' },
  INVALID_SUBRESOURCE: { status: 400, template: '%s %s not found.' },
  INVALID_FILTER: { status: 400, template: 'One or more arguments are either duplicate or invalid' },
  INVALID_LIMIT: { status: 400, template: "Supplied pagination limit '%s' is not valid." },
  INVALID_MARKER: { status: 400, template: "Supplied pagination marker '%s' is not valid." },
  INVALID_WAIT: { status: 400, template: "Supplied wait '%s' is not valid: give whole seconds from 0 to %s." },
  INVALID_SORT_KEY: { status: 400, template: "Supplied sort key '%s' is not valid." },
  INVALID_SORT_DIR: { status: 400, template: "Supplied sort direction '%s' is not valid." },
  PROVIDER_NOT_ENABLED: { status: 400, template: "Provider '%s' is not enabled." },
  PROVIDER_NOT_FOUND: { status: 501, template: "Provider '%s' was not found." },
  PROVIDER_UNSUPPORTED_OPTION: { status: 501, template: "Provider '%s' does not support a requested option: %s" },
  PROVIDER_NOT_IMPLEMENTED: { status: 501, template: "Provider '%s' does not support a requested action: %s" },
  FLAVOR_PROVIDER_MISMATCH: { status: 400, template: "Flavor '%s' is not compatible with provider '%s'" },
  BAD_REQUEST: { status: 400, template: '%s' },
  UNAUTHORIZED: { status: 401, template: 'The request you have made requires authentication.' },
  POLICY_FORBIDDEN: { status: 403, template: 'Policy does not allow this request to be performed.' },
  QUOTA_EXCEEDED: { status: 403, template: 'Quota has been met for resources: %s' },
  LB_IMMUTABLE: { status: 409, template: '%s %s is immutable and cannot be updated.' },
  LB_INVALID_STATE: { status: 409, template: 'Invalid state %s of loadbalancer resource %s' },
  DUPLICATE: { status: 409, template: '%s' },
  IN_USE: { status: 409, template: '%s %s is in use and cannot be modified.' },
  CONFLICT: { status: 409, template: '%s' },
  VIP_IN_USE: { status: 409, template: 'The VIP IP address is already in use: %s' },
  HM_DUPLICATE: { status: 409, template: 'This pool already has a health monitor' },
  LISTENER_NO_CHILDREN: { status: 400, template: 'Protocol %s listeners cannot have child objects.' },
  L7POLICY_INVALID_ARGS: { status: 400, template: 'Invalid L7 Policy arguments: %s' },
  L7RULE_INVALID: { status: 400, template: 'Error parsing L7Rule: %s' },
  L7RULE_TOO_MANY: { status: 409, template: 'Too many rules on L7 policy %s' },
  /** Octavia's CertificateRetrievalException: `%s` is the Python list of the references. */
  CERTIFICATE_RETRIEVAL: { status: 400, template: 'Could not retrieve certificate: %s' },
  /** A readable reference whose material is unusable; the message names the reference and the problem. */
  CERTIFICATE_INVALID: { status: 400, template: '%s' },
  INTERNAL: { status: 500, template: '%s' },
  // Keystone's own wording, for the embedded identity API and the external-Keystone client.
  IDENTITY_VALIDATION: {
    status: 400,
    template: 'Expecting to find %s in %s. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.',
  },
  IDENTITY_FORBIDDEN: { status: 403, template: 'You are not authorized to perform the requested action: %s.' },
  IDENTITY_NOT_FOUND: { status: 404, template: 'Could not find %s: %s.' },
  TOKEN_NOT_FOUND: { status: 404, template: 'Failed to validate token' },
  IDENTITY_UNAVAILABLE: { status: 503, template: 'Keystone at %s is unreachable: %s' },
  DASHBOARD_RELAY_FAILED: { status: 502, template: '%s at %s did not answer the dashboard\'s call: %s. Check that this API process reaches it.' },
  DASHBOARD_NOT_BUILT: { status: 503, template: 'The dashboard is not built (%sindex.html is missing): run npm run build, then restart.' },
} as const satisfies Record<string, CatalogEntry>;

export type ErrorCode = keyof typeof errorCatalog;

export class ApiError extends Error {
  readonly status: number;
  readonly format: ErrorFormat;
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    const entry: CatalogEntry = errorCatalog[code];
    this.status = entry.status;
    this.format = entry.format ?? 'wsme';
    this.name = 'ApiError';
  }
}

/** Builds the catalog error `code` with its `%s` slots filled in order. */
export function apiError(code: ErrorCode, ...args: Array<string | number | null | undefined>): ApiError {
  let i = 0;
  const message = errorCatalog[code].template.replace(/%s/g, () => String(args[i++] ?? 'None'));
  return new ApiError(code, message);
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
