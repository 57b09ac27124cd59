package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The modules as a user on the module path gets them: {@code dev.sema} and {@code dev.sema.redis} (with
 * Lettuce as the automatic module {@code lettuce.core}) resolve in a layer of their own, {@code dev.sema}
 * exports its API to everyone and {@code dev.sema.internal} only to Sema's own modules, and the semaphore
 * works when loaded from there.
 */
class ModulePathTest {

    private static ModuleLayer layer() {
        List<Path> paths = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            String name = p.getFileName().toString();
            boolean semaCore = entry.contains("sema-core") && !name.contains("tests") && !entry.contains("test-classes");
            boolean semaRedis = entry.contains("sema-redis") && !entry.contains("test-classes");
            if ((semaCore || semaRedis || name.startsWith("lettuce-core")) && Files.exists(p)) {
                paths.add(p);
            }
        }
        ModuleFinder finder = ModuleFinder.of(paths.toArray(Path[]::new));
        Configuration config = ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(),
                Set.of("dev.sema.redis"));
        return ModuleLayer.boot().defineModulesWithOneLoader(config, ClassLoader.getPlatformClassLoader());
    }

    @Test
    void theModulesResolveAndExportOnlyTheirApi() {
        ModuleLayer layer = layer();
        Module core = layer.findModule("dev.sema").orElseThrow();
        Module redis = layer.findModule("dev.sema.redis").orElseThrow();
        assertThat(layer.findModule("lettuce.core")).isPresent();
        assertThat(core.isExported("dev.sema")).isTrue();
        assertThat(core.isExported("dev.sema.internal")).as("internal exported to everyone").isFalse();
        assertThat(core.isExported("dev.sema.internal", redis)).isTrue();
        assertThat(redis.isExported("dev.sema.redis")).isTrue();
        assertThat(redis.canRead(core)).isTrue();
        ModuleDescriptor.Exports internal = core.getDescriptor().exports().stream()
                .filter(e -> e.source().equals("dev.sema.internal")).findFirst().orElseThrow();
        assertThat(internal.targets()).containsExactlyInAnyOrder("dev.sema.redis", "dev.sema.micrometer",
                "dev.sema.spring", "dev.sema.reactor", "dev.sema.kotlin", "dev.sema.grpc");
        assertThat(core.getDescriptor().exports()).extracting(ModuleDescriptor.Exports::source)
                .containsExactlyInAnyOrder("dev.sema", "dev.sema.internal");
    }

    @Test
    void aSemaphoreLoadedFromTheModuleWorks() throws Exception {
        ModuleLayer layer = layer();
        ClassLoader loader = layer.findLoader("dev.sema");
        Class<?> semaphore = loader.loadClass("dev.sema.Semaphore");
        assertThat(semaphore.getModule().getName()).isEqualTo("dev.sema");
        Object s = semaphore.getMethod("create", long.class).invoke(null, 2L);
        Object permit = semaphore.getMethod("acquire", long.class).invoke(s, 2L);
        assertThat(semaphore.getMethod("availablePermits").invoke(s)).isEqualTo(0L);
        loader.loadClass("dev.sema.Permit").getMethod("close").invoke(permit);
        assertThat(semaphore.getMethod("availablePermits").invoke(s)).isEqualTo(2L);
    }
}
