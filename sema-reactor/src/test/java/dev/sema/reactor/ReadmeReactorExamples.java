package dev.sema.reactor;

import dev.sema.Semaphore;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The Java example of the README's "Reactor" section, verbatim, so that the compiler checks it;
 * {@link ReadmeReactorTest} checks that it is here and runs it.
 */
class ReadmeReactorExamples {
    Semaphore calls;
    Semaphore memory;
    Mono<String> reply;
    List<String> results;

    void example1() {
        Semaphore calls = Semaphore.create(4);
        Mono<String> reply = Mono.fromCallable(() -> "pong")
                .transformDeferred(SemaReactor.withPermits(calls, 1)); // held from subscription to the end

        Semaphore memory = Semaphore.create(64); // MiB
        Flux<String> resized = SemaReactor.mapWeighted(Flux.just(8L, 48L, 16L), memory, mib -> mib,
                mib -> Mono.fromCallable(() -> mib + " MiB resized")); // source order, at most 64 MiB at once
        List<String> results = resized.collectList().block();

        this.calls = calls;
        this.memory = memory;
        this.reply = reply;
        this.results = results;
    }
}
