/* polylock/express: the Idempotency-Key middleware for Express (hand-written; the rules are
 * the core's, see index.d.ts's HttpIdempotencyRules). */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Client, Fingerprint } from './index'

export interface ExpressIdempotencyOptions {
  /** The polylock client whose store keeps the keys and responses. */
  client: Client
  /** The request header that carries the key (default `Idempotency-Key`). */
  header?: string
  /** How long a completed key replays its response, in ms (default 24 h). */
  lifetimeMs?: number
  /** The methods it applies to (default `['POST', 'PATCH']`); other requests pass through. */
  methods?: string[]
  /**
   * The request's fingerprint (a repeat of a key with another one gets 422); default: the
   * method, the path with its query and the raw body, as every language's middleware makes it.
   */
  fingerprint?: (req: any, rawBody: Buffer | undefined) => Fingerprint | PromiseLike<Fingerprint>
  /** The idempotency namespace (default `'http'`): services sharing it replay each other's responses. */
  namespace?: string
}

/** An Express middleware (`app.use(idempotency({ client }))`, before the body parsers). */
export declare function idempotency(
  options: ExpressIdempotencyOptions,
): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void
