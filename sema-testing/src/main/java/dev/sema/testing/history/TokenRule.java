package dev.sema.testing.history;

import dev.sema.testing.history.Timeline.Request;
import dev.sema.testing.history.Violation.Rule;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Rule 2, fencing tokens, for each semaphore: no two grants share a token, and a grant that started
 * after another completed (its invoke after the other's ok) has the higher token.
 *
 * <p>Zero-permit grants are held to both: sema-redis takes their token from the same counter as any
 * other ({@code acquire.lua} calls {@code next_fence()} for 0 permits, and {@code RedisPermit} promises
 * "a fresh token too"), so a repeated one is a bug as well. Only request-level grants are in a history;
 * the parts of a split, which share their grant's token, are not.
 *
 * <p>A semaphore that expires from Redis while idle (sema-redis's {@code expireWhenIdle}, as a keyed family's
 * keys do) and is created again by its next request is one semaphore here, over all its lives in Redis: a
 * resource that checks tokens knows it by name, so its tokens must go on increasing, as sema-redis promises
 * (a new semaphore's first token is floored by Redis's clock). A token that starts over is a violation.
 */
final class TokenRule {

    private TokenRule() {
    }

    static void check(Timeline timeline, List<Violation> violations) {
        timeline.grantsBySemaphore().forEach((semaphore, grants) -> {
            unique(timeline, semaphore, grants, violations);
            ordered(timeline, semaphore, grants, violations);
        });
    }

    private static void unique(Timeline timeline, String semaphore, List<Request> grants, List<Violation> violations) {
        Map<Long, List<Request>> byToken = new LinkedHashMap<>();
        for (Request r : grants) {
            byToken.computeIfAbsent(r.token(), k -> new ArrayList<>()).add(r);
        }
        byToken.forEach((token, same) -> {
            if (same.size() > 1) {
                Request second = same.stream().sorted(Comparator.comparingLong(Request::okAt)).skip(1).findFirst()
                        .orElseThrow();
                violations.add(Violation.of(Rule.DUPLICATE_TOKEN, semaphore, second.run.process, second.okAt(),
                        semaphore + ": token " + token + " given to " + same.size() + " grants: " + same.stream()
                                .map(r -> r.name() + " (" + r.permits() + " permits, ok " + timeline.at(r.okAt()) + ")")
                                .collect(Collectors.joining(", "))));
            }
        });
    }

    /**
     * Real-time order: walking the grants by invoke time, the highest token among the grants whose ok
     * came strictly before the invoke must be lower than the grant's own. Equal tokens are left to
     * {@link #unique}. The breaches caused by one earlier grant are reported together.
     */
    private static void ordered(Timeline timeline, String semaphore, List<Request> grants, List<Violation> violations) {
        List<Request> byOk = new ArrayList<>(grants);
        byOk.sort(Comparator.comparingLong(Request::okAt));
        List<Request> byInvoke = new ArrayList<>(grants);
        byInvoke.sort(Comparator.comparingLong(Request::invokedAt));
        Map<Request, List<Request>> breaches = new LinkedHashMap<>();
        Request highest = null;
        int done = 0;
        for (Request b : byInvoke) {
            while (done < byOk.size() && byOk.get(done).okAt() < b.invokedAt()) {
                Request a = byOk.get(done++);
                if (highest == null || a.token() > highest.token()) {
                    highest = a;
                }
            }
            if (highest != null && highest.token() > b.token()) {
                breaches.computeIfAbsent(highest, k -> new ArrayList<>()).add(b);
            }
        }
        breaches.forEach((a, later) -> {
            Request b = later.getFirst();
            violations.add(Violation.of(Rule.TOKEN_ORDER, semaphore, b.run.process, b.okAt(),
                    semaphore + ": " + a.name() + " got token " + a.token() + " (ok " + timeline.at(a.okAt())
                    + ") before " + b.name() + " started (invoke " + timeline.at(b.invokedAt()) + "), which got the lower token "
                    + b.token() + (later.size() > 1 ? "; so did " + (later.size() - 1) + " more grants started after it" : "")));
        });
    }
}
