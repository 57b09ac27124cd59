package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.internal.LockSections;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every method LockSections names exists: the BlockHound integrations match by name, and would match nothing. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class LockSectionsTest {
    @Test
    void everySectionNamesAMethodOfItsClass() throws Exception {
        List<String[]> all = new ArrayList<>(LockSections.ALLOWED);
        all.addAll(LockSections.CHECKED);
        assertThat(all).hasSize(11);
        for (String[] section : all) {
            Class<?> c = Class.forName(section[0]);
            boolean found = false;
            for (Method m : c.getDeclaredMethods()) {
                found |= m.getName().equals(section[1]);
            }
            assertThat(found).as(section[0] + "." + section[1] + " exists").isTrue();
        }
    }
}
