package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.history.Recorder;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

/**
 * The worker processes of a chaos run, one per slot, each with its own {@link FaultProxy} in front of each
 * Redis process it reaches (each {@link Topology.Endpoint}).
 * A worker killed by a fault is replaced in its slot by a new process with a new name ({@code w3},
 * {@code w3.2}, ...), so that histories never mix two lives of one process.
 *
 * <p>Rules: the scheduler records {@code kill} once the process is dead, {@code stop} once SIGSTOP is
 * delivered and {@code cont} once SIGCONT is: each event comes after the fact it marks, so the checker
 * counts a belief for as long as it may have lasted, never shorter.
 */
final class Fleet implements AutoCloseable {

    /** One slot: its proxies by endpoint name, and the worker process that uses them now. */
    final class Slot {
        final int index;
        final Map<String, FaultProxy> proxies;
        int lives;
        String name;
        Process process;
        boolean stopped;

        Slot(int index, Map<String, FaultProxy> proxies) {
            this.index = index;
            this.proxies = proxies;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private final ChaosRun.Options o;
    private final Topology topology;
    private final Recorder rec;
    private final List<Slot> slots = new ArrayList<>();

    Fleet(ChaosRun.Options o, Topology topology, Recorder rec) throws IOException {
        this.o = o;
        this.topology = topology;
        this.rec = rec;
        try {
            for (int i = 1; i <= o.processes(); i++) {
                Map<String, FaultProxy> proxies = new LinkedHashMap<>();
                slots.add(new Slot(i, proxies));
                for (Topology.Endpoint e : topology.endpoints()) {
                    proxies.put(e.name(), FaultProxy.start("127.0.0.1", e.target()));
                }
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    List<Slot> slots() {
        return slots;
    }

    void startAll() throws IOException {
        for (Slot s : slots) {
            start(s);
        }
    }

    /** Starts a new worker process in the slot. */
    synchronized void start(Slot s) throws IOException {
        s.lives++;
        s.name = "w" + s.index + (s.lives > 1 ? "." + s.lives : "");
        s.stopped = false;
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("-Xmx192m", "-XX:TieredStopAtLevel=1", "-Dio.netty.noUnsafe=true",
                "-cp", System.getProperty("java.class.path"),
                ChaosWorker.class.getName(), s.name, topology.workerUri(s.proxies),
                o.out().resolve(s.name + ".hist").toString(), Long.toString(o.seed() + 7919L * s.index + s.lives),
                Long.toString(o.lease().toMillis()), Integer.toString(o.threads()), o.semaphores()));
        if (o.broken()) {
            command.add("broken");
        }
        if (o.replicas() > 0) {
            command.add("replicas=" + o.replicas());
        }
        if (topology.mapped()) {
            StringJoiner map = new StringJoiner(",", "map=", "");
            for (Topology.Endpoint e : topology.endpoints()) {
                map.add(e.advertised() + ">" + s.proxies.get(e.name()).port());
            }
            command.add(map.toString());
        }
        Path log = o.out().resolve(s.name + ".log");
        s.process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** SIGKILL: the process dies with whatever it held (its leases end in Redis). */
    synchronized void kill(Slot s) throws InterruptedException {
        s.process.destroyForcibly();
        s.process.waitFor(10, TimeUnit.SECONDS);
        rec.kill(s.name);
        s.stopped = false;
    }

    /** SIGSTOP: the process stops where it is, its timers included. */
    synchronized void pause(Slot s) throws IOException, InterruptedException {
        ChaosRun.exec("kill", "-STOP", Long.toString(s.process.pid()));
        s.stopped = true;
        rec.stop(s.name);
    }

    /** SIGCONT. */
    synchronized void resume(Slot s) throws IOException, InterruptedException {
        if (!s.stopped) {
            return;
        }
        ChaosRun.exec("kill", "-CONT", Long.toString(s.process.pid()));
        s.stopped = false;
        rec.cont(s.name);
    }

    /**
     * Tells every worker to stop (the end of its standard input) and waits for each to finish its requests,
     * give back what it holds and exit; a worker still running after 90 s is reported and killed, without a
     * {@code kill} event, so the checker reports it as hung.
     */
    void stopAll(PrintStream out) throws InterruptedException {
        for (Slot s : slots) {
            try {
                s.process.getOutputStream().close();
            } catch (IOException e) {
                // dead already: its exit status says so below
            }
        }
        for (Slot s : slots) {
            if (!s.process.waitFor(90, TimeUnit.SECONDS)) {
                out.println("chaos: " + s.name + " did not stop within 90 s: killed, and reported as hung");
                s.process.destroyForcibly();
                s.process.waitFor(10, TimeUnit.SECONDS);
            } else if (s.process.exitValue() != 0) {
                out.println("chaos: " + s.name + " exited with status " + s.process.exitValue() + " (see "
                        + s.name + ".log)");
            }
        }
    }

    @Override
    public void close() {
        for (Slot s : slots) {
            if (s.process != null && s.process.isAlive()) {
                s.process.destroyForcibly();
            }
            s.proxies.values().forEach(FaultProxy::close);
        }
    }
}
