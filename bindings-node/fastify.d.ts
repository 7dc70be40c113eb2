/* polylock/fastify: the Idempotency-Key plugin for Fastify (hand-written; the rules are the
 * core's, see index.d.ts's HttpIdempotencyRules). */
import type { Client, Fingerprint } from './index'

/**
 * The Fastify plugin (`await app.register(idempotency, { client })`): fastify-plugin style, so
 * its hooks cover the context it is registered in and that context's children.
 */
declare function idempotency(fastify: any, options: idempotency.FastifyIdempotencyOptions): Promise<void>

declare namespace idempotency {
  export interface FastifyIdempotencyOptions {
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
     * method, the URL with its query and the raw body, as every language's middleware makes it.
     */
    fingerprint?: (request: any, rawBody: Buffer) => Fingerprint | PromiseLike<Fingerprint>
    /** The idempotency namespace (default `'http'`): services sharing it replay each other's responses. */
    namespace?: string
  }
  export { idempotency, idempotency as default }
}

export = idempotency
