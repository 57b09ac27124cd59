/**
 * The rules that every {@link dev.sema.Semaphore} implementation keeps alike: argument checks and their
 * messages, timeout arithmetic, the exceptions that report a request's end, and the future that withdraws
 * its request before it completes, the counts metrics read together, the keyed families' shared parts, and the
 * engine's lock sections for BlockHound. Not an API: the module exports this package only to Sema's own modules:
 * {@code dev.sema.redis}, the other engine, {@code dev.sema.micrometer}, the starter, {@code dev.sema.reactor},
 * {@code dev.sema.kotlin} and {@code dev.sema.grpc}.
 */
package dev.sema.internal;
