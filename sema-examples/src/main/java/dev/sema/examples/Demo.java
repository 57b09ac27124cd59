package dev.sema.examples;

import dev.sema.Permit;
import dev.sema.Semaphore;

/** Placeholder demo: replaced by the full tour. */
public final class Demo {
    private Demo() {
    }

    public static void main(String[] args) throws Exception {
        Semaphore s = Semaphore.create(2);
        try (Permit p = s.acquire()) {
            System.out.println(s + " holding " + p.permits());
        }
    }
}
