package dev.sema.spring.example;

import dev.sema.spring.WithPermits;
import java.util.concurrent.TimeUnit;
import org.springframework.context.annotation.Profile;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * The {@code redis} profile only: {@code GET /exports/{id}} holds a permit of {@code exports}, a
 * {@code RedisSemaphore} whose limit every instance of the application shares through the Redis at
 * {@code SEMA_REDIS_URI}. {@code @WithPermits} works on a controller's handler method as on any bean's.
 */
@RestController
@Profile("redis")
public class ExportController {

    /** Created by Spring. */
    public ExportController() {
    }

    /**
     * One export, holding a permit of the fleet-wide {@code exports} semaphore.
     *
     * @param id the export
     * @return what was exported
     * @throws InterruptedException if interrupted while exporting
     */
    @GetMapping("/exports/{id}")
    @WithPermits(value = "exports", timeout = "1s")
    public String export(@PathVariable String id) throws InterruptedException {
        TimeUnit.MILLISECONDS.sleep(10);
        return "export " + id;
    }
}
