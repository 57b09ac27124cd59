package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How a script is put together from its resources (no Redis needed). */
@Timeout(10)
class ScriptTest {

    @Test
    void anOperationWithAFastPathHasItBetweenThePreludeAndCommon() {
        String s = Script.compose("P", "C", "-- head\nFAST\n" + Script.COMMON + "\nREST\n");
        assertThat(s).isEqualTo("P\n-- head\nFAST\nC\nREST\n");
    }

    @Test
    void anOperationWithoutOneComesWholeAfterCommon() {
        assertThat(Script.compose("P", "C", "OP\n")).isEqualTo("P\nC\nOP\n");
    }

    @Test
    void everyScriptIsPutTogetherOnceWithItsOwnSha() {
        java.util.Set<String> shas = new java.util.HashSet<>();
        for (Script s : Script.values()) {
            if (s == Script.UPGRADE) {
                assertThat(s.source()).startsWith("-- UPGRADE.").doesNotContain("local function");
                shas.add(s.sha());
                continue;
            }
            assertThat(s.source()).startsWith("-- First part of every sema-redis script");
            assertThat(s.source()).doesNotContain(Script.COMMON + "\n");
            assertThat(s.sha()).hasSize(40);
            shas.add(s.sha());
        }
        assertThat(shas).hasSize(Script.values().length);
        // The fast paths come before the shared functions, which they must not use.
        String acquire = Script.ACQUIRE.source();
        assertThat(acquire.indexOf("HSETNX")).isLessThan(acquire.indexOf("local function grant_loop"));
        String release = Script.RELEASE.source();
        assertThat(release.indexOf("'PUBLISH'")).isLessThan(release.indexOf("local function grant_loop"));
    }
}
