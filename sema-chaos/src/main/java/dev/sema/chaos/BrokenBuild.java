package dev.sema.chaos;

import java.lang.reflect.Field;

/**
 * The deliberately broken build of {@code bin/chaos broken}: turns off, through sema-redis's test hook, the
 * check that keeps a grant arriving after its lease could have ended from reaching its caller (the handle's
 * rule L9), so that a late grant is handed over as it is, as before that check existed. Only the chaos
 * workers call it, on the class path, where the package is open to reflection.
 */
final class BrokenBuild {

    static void skipLateGrantCheck() throws ReflectiveOperationException {
        Field f = Class.forName("dev.sema.redis.LettuceSemaphore").getDeclaredField("lateGrantsUnchecked");
        f.setAccessible(true);
        f.setBoolean(null, true);
    }

    private BrokenBuild() {
    }
}
