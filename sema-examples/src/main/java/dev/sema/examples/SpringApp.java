package dev.sema.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An example Spring Boot application in a JVM of its own, on a random loopback port ({@code server.port=0}; Spring
 * Boot's {@code WebServerPortFileWriter} writes the port to the file {@code PORTFILE} names), with its module's class
 * path: Spring Boot is on no class path of the demo's own. Closing it stops it with SIGTERM (Spring Boot's graceful
 * shutdown), then SIGKILL if it has not exited within 20 s; a shutdown hook does the same if the demo is stopped
 * first.
 */
final class SpringApp implements AutoCloseable {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    private final Process process;
    /** Its log and port file, a temporary directory deleted on close. */
    private final Path logs;
    private final Path log;
    private final int port;
    private final Thread hook;
    private double startSeconds;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    /** The probes' own client, as a prober has its own: the load's answers do not delay theirs. */
    private final HttpClient probes = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private SpringApp(Process process, Path logs, int port, Thread hook) {
        this.process = process;
        this.logs = logs;
        this.log = logs.resolve("app.log");
        this.port = port;
        this.hook = hook;
    }

    /**
     * Starts the application and waits until its health is UP.
     *
     * @param module the example module, with its {@code target/classpath.txt}
     * @param mainClass the application's main class
     * @param jvmOptions options for its JVM besides the class path, heap and port file
     * @param timeout how long it may take to start
     */
    static SpringApp start(Path module, String mainClass, List<String> jvmOptions, Duration timeout)
            throws IOException, InterruptedException {
        long begin = System.nanoTime();
        Path logs = Files.createTempDirectory("sema-demo-" + module.getFileName());
        String classPath = module.resolve("target/classes") + java.io.File.pathSeparator
                + Files.readString(module.resolve("target/classpath.txt")).strip();
        Path portFile = logs.resolve("app.port");
        Path log = logs.resolve("app.log");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classPath, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-DPORTFILE=" + portFile));
        command.addAll(jvmOptions);
        command.addAll(List.of(mainClass,
                "--server.port=0", "--server.address=127.0.0.1", "--spring.output.ansi.enabled=never"));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile())
                .start();
        Thread hook = new Thread(process::destroyForcibly, "demo-" + module.getFileName() + "-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        long deadline = begin + timeout.toNanos();
        SpringApp app = null;
        try {
            while (!Files.isRegularFile(portFile) || Files.size(portFile) == 0) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the application exited with status "
                            + process.exitValue() + problems(log));
                }
                if (System.nanoTime() - deadline >= 0) {
                    throw new IllegalStateException("the application did not start within " + timeout
                            + problems(log));
                }
                Thread.sleep(50);
            }
            int port = Integer.parseInt(Files.readString(portFile).strip());
            app = new SpringApp(process, log, port, hook);
            while (!app.healthy()) {
                if (System.nanoTime() - deadline >= 0) {
                    throw new IllegalStateException("the application's health was not UP within " + timeout
                            + problems(log));
                }
                Thread.sleep(50);
            }
            app.startSeconds = (System.nanoTime() - begin) / 1e9;
            return app;
        } catch (IOException | RuntimeException | InterruptedException | Error e) {
            if (app != null) {
                app.client.close();
                app.probes.close();
            }
            process.destroyForcibly();
            Runtime.getRuntime().removeShutdownHook(hook);
            process.waitFor(10, TimeUnit.SECONDS);
            delete(logs); // its end is in the exception's message
            throw e;
        }
    }

    /** Deletes the log directory, as far as it can: a file left behind in a temporary directory is no failure. */
    private static void delete(Path logs) {
        try (var files = Files.list(logs)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(logs);
        } catch (IOException e) {
            // left to the system's cleaning of its temporary files
        }
    }

    private boolean healthy() {
        try {
            HttpResponse<String> r = get("/actuator/health");
            return r.statusCode() == 200 && r.body().startsWith("{") && r.body().contains("\"status\":\"UP\"");
        } catch (RuntimeException e) {
            return false;
        }
    }

    long pid() {
        return process.pid();
    }

    int port() {
        return port;
    }

    double startSeconds() {
        return startSeconds;
    }

    HttpResponse<String> send(String path) throws IOException, InterruptedException {
        return client.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> probe(String path) throws IOException, InterruptedException {
        return probes.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path) {
        return call(request(path).GET().build());
    }

    HttpResponse<String> post(String path, String json) {
        return call(request(path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    HttpResponse<String> delete(String path) {
        return call(request(path).DELETE().build());
    }

    Prometheus scrape() {
        HttpResponse<String> r = get("/actuator/prometheus");
        if (r.statusCode() != 200) {
            throw new IllegalStateException("/actuator/prometheus answered " + r.statusCode());
        }
        return Prometheus.parse(r.body());
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(REQUEST_TIMEOUT);
    }

    /**
     * Sends a request of the demo's own (a read of the actuator, a change of a limit), on a connection the load may
     * have used: one that the server closed just as it was taken from the pool fails at once, so the request is
     * sent once more before that counts as a failure.
     */
    private HttpResponse<String> call(HttpRequest request) {
        try {
            try {
                return client.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            } catch (IOException closedUnderIt) {
                return client.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The application's log, for a failure's message. */
    String problems() {
        return problems(log);
    }

    private static String problems(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return lines.isEmpty() ? "" : "; the end of its log:\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close() throws InterruptedException {
        client.close();
        probes.close();
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs anyway, and finds the process gone
        }
        delete(logs);
    }

    /**
     * The directory of an example module ({@code sema-spring-example}, {@code sema-reactive-example}), found from the
     * working directory up ({@code bin/demo} runs in the project's root, the tests in sema-examples).
     *
     * @throws IllegalStateException if it is not there, or not built
     */
    static Path module(String name) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path module = dir.resolve(name);
            if (Files.isRegularFile(module.resolve("pom.xml"))) {
                if (!Files.isRegularFile(module.resolve("target/classpath.txt"))) {
                    throw new IllegalStateException(module + " is not built (no target/classpath.txt): bin/demo"
                            + " builds it, as does mvn package -pl sema-examples -am");
                }
                return module;
            }
        }
        throw new IllegalStateException("no " + name + " above " + Path.of("").toAbsolutePath());
    }
}
