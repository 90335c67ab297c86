/**
 * Failures of the key manager's HTTP API, in Barbican's shape: `{"code", "title",
 * "description"}` (pecan's JSON error hook), the body python-barbicanclient turns into
 * "<title>: <description>". Descriptions follow Barbican's wording and never carry a payload.
 */
export class BarbicanError extends Error {
  constructor(
    readonly status: number,
    readonly description: string,
  ) {
    super(description);
  }
}

const TITLES: Readonly<Record<number, string>> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 409: 'Conflict', 413: 'Request Entity Too Large', 415: 'Unsupported Media Type',
  500: 'Internal Server Error',
};

export function barbicanBody(e: BarbicanError): { code: number; title: string; description: string } {
  return { code: e.status, title: TITLES[e.status] ?? 'Error', description: e.description };
}

/** What Barbican says when policy refuses: the operation, never the target's details. */
export function notAllowed(operation: string): BarbicanError {
  return new BarbicanError(403, `${operation} attempt not allowed - please review your user/project privileges`);
}

/** A request Barbican understood but refused, e.g. "Secret creation issue seen - <reason>." */
export function issue(operation: string, status: number, reason: string): BarbicanError {
  return new BarbicanError(status, `${operation} issue seen - ${reason}.`);
}

/** An internal failure: the client learns the operation failed, the log learns why. */
export function failure(operation: string, cause: unknown): BarbicanError {
  return Object.assign(new BarbicanError(500, `${operation} failure seen - please contact site administrator.`), { cause });
}

/** A body that does not match the schema Barbican validates it with. */
export function invalidObject(operation: string, schema: string, reason: string, property: string): BarbicanError {
  return issue(operation, 400, `Provided object does not match schema '${schema}': ${reason}. Invalid property: '${property}'`);
}

export function unsupportedContentType(expected: readonly string[]): BarbicanError {
  return new BarbicanError(415, `Unexpected content type. Expected content types are: ${pythonList(expected)}`);
}

/** Barbican's messages print lists as Python reprs. */
export function pythonList(items: readonly string[]): string {
  return `[${items.map((t) => `'${t}'`).join(', ')}]`;
}

/** A reference that does not point at this key manager (another service, a bare id, an ACL URL…). */
export class ForeignReferenceError extends Error {}

/** A well-formed reference to nothing (deleted, expired, never created). */
export class MissingReferenceError extends Error {}
