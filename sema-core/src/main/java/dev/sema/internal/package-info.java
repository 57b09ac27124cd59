/**
 * The rules that every {@link dev.sema.Semaphore} implementation keeps alike: argument checks and their
 * messages, timeout arithmetic, the exceptions that report a request's end, and the future that withdraws
 * its request before it completes, and the counts metrics read together. Not an API: the module exports this
 * package only to {@code dev.sema.redis}, the other engine, and {@code dev.sema.micrometer}.
 */
package dev.sema.internal;
