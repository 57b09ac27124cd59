package dev.sema.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * A TCP proxy on a loopback port in front of one server (a Redis), which injects the network faults that
 * break distributed systems: partitions (both ways or one way, of every connection or of some), latency,
 * resets and half-open connections. Clients connect to {@link #port()} instead of the server's port; each
 * accepted connection (a {@link Link}) gets a connection of its own to the server, and bytes are copied
 * both ways, in order, by virtual threads.
 *
 * <p>The faults model what TCP does, not what a firewall does to packets:
 * <ul>
 *   <li>A <b>partition</b> holds the bytes of the cut direction (they stay in flight, as TCP keeps
 *       retransmitting them) and delivers them, in order, when it {@link #heal() heals}. Connections stay
 *       open on both sides, and new ones are accepted and cut in the same way.
 *   <li><b>Latency</b> delays every chunk by the same amount each way, keeping the order.
 *   <li>A <b>reset</b> ({@link #resetAll()}) ends every connection with a TCP RST on both sides; bytes in
 *       flight are lost, as with a real reset.
 *   <li>A <b>half-open</b> connection ({@link #halfOpen()}): the server side is closed (the server sees the
 *       client leave), but the client is never told: its connection stays open, what it sends is dropped
 *       and it never hears anything again, as when a peer's FIN or RST is lost with the host that sent it.
 * </ul>
 * Faults apply to the links that {@code which} selects when the bytes move, so a partition can cut only the
 * connections that subscribed to pub/sub channels ({@link Link#subscriber()}).
 */
public final class FaultProxy implements AutoCloseable {

    /** Which way a partition cuts. */
    public enum Direction {
        /** Nothing moves either way. */
        BOTH,
        /** Requests are held; replies (already sent) still arrive. */
        TO_SERVER,
        /** Replies and pushed messages are held; requests still reach the server. */
        TO_CLIENT
    }

    private static final System.Logger LOG = System.getLogger(FaultProxy.class.getName());
    private static final int CHUNK = 16 * 1024;

    private final InetSocketAddress upstream;
    private final ServerSocket listener;
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("fault-proxy-", 0).factory());
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicInteger linkIds = new AtomicInteger();
    private final AtomicLong resets = new AtomicLong();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition healed = lock.newCondition();
    /* Guarded by lock; read by the writers before every chunk. */
    private Predicate<Link> cutToServer = l -> false;
    private Predicate<Link> cutToClient = l -> false;
    private volatile long latencyNanos;
    private volatile boolean closed;

    private FaultProxy(InetSocketAddress upstream, ServerSocket listener) {
        this.upstream = upstream;
        this.listener = listener;
    }

    /**
     * Starts a proxy on a free loopback port in front of {@code host:port}.
     *
     * @param host the server's host
     * @param port the server's port
     * @return the running proxy
     * @throws IOException if no port can be bound
     */
    public static FaultProxy start(String host, int port) throws IOException {
        ServerSocket listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        FaultProxy proxy = new FaultProxy(new InetSocketAddress(host, port), listener);
        proxy.threads.execute(proxy::accept);
        return proxy;
    }

    /**
     * Returns the loopback port clients connect to.
     *
     * @return the port
     */
    public int port() {
        return listener.getLocalPort();
    }

    /**
     * Returns the Redis URI of the proxy.
     *
     * @param query a URI query such as {@code timeout=1s}, or empty
     * @return {@code redis://127.0.0.1:<port>}, with {@code ?query} appended when not empty
     */
    public String redisUri(String query) {
        return "redis://127.0.0.1:" + port() + (query == null || query.isEmpty() ? "" : "?" + query);
    }

    /**
     * Cuts every link, in {@code direction}, until {@link #heal()}.
     *
     * @param direction which way nothing moves
     */
    public void partition(Direction direction) {
        partition(direction, l -> true);
    }

    /**
     * Cuts the links that {@code which} selects, in {@code direction}, until {@link #heal()}; replaces any
     * partition in force.
     *
     * @param direction which way nothing moves
     * @param which     the links cut, tested whenever bytes would move (so a link opened later is cut too)
     */
    public void partition(Direction direction, Predicate<Link> which) {
        Objects.requireNonNull(direction, "direction");
        Objects.requireNonNull(which, "which");
        lock.lock();
        try {
            cutToServer = direction != Direction.TO_CLIENT ? which : l -> false;
            cutToClient = direction != Direction.TO_SERVER ? which : l -> false;
        } finally {
            lock.unlock();
        }
    }

    /** Ends the partition: held bytes are delivered, in order. */
    public void heal() {
        lock.lock();
        try {
            cutToServer = l -> false;
            cutToClient = l -> false;
            healed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Delays every chunk read from now on by {@code eachWay} (zero: none).
     *
     * @param eachWay the delay, in each direction
     */
    public void latency(Duration eachWay) {
        latencyNanos = Math.max(0, eachWay.toNanos());
    }

    /** Ends every open connection with a reset on both sides; bytes in flight are lost. */
    public void resetAll() {
        for (Link l : links) {
            l.reset();
        }
        resets.incrementAndGet();
    }

    /** Closes the server side of every open connection without telling the client (see the class comment). */
    public void halfOpen() {
        for (Link l : links) {
            l.halfOpen();
        }
    }

    /**
     * Returns the connections open now.
     *
     * @return a copy of the list
     */
    public List<Link> links() {
        return new ArrayList<>(links);
    }

    /**
     * Returns how many connections were accepted so far.
     *
     * @return the count
     */
    public int accepted() {
        return linkIds.get();
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Link l : links) {
            l.reset();
        }
        heal();
        threads.shutdownNow();
    }

    @Override
    public String toString() {
        return "FaultProxy[" + port() + " -> " + upstream.getPort() + ", links=" + links.size() + "]";
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "fault proxy: accept failed", e);
                }
                return;
            }
            threads.execute(() -> open(client));
        }
    }

    private void open(Socket client) {
        Socket server = new Socket();
        try {
            client.setTcpNoDelay(true);
            server.setTcpNoDelay(true);
            server.connect(upstream, 5_000);
        } catch (IOException e) {
            close(client);
            close(server);
            return;
        }
        Link link = new Link(linkIds.incrementAndGet(), client, server);
        links.add(link);
        if (closed) {
            link.reset();
            return;
        }
        link.start();
    }

    /** Waits while {@code link} is cut in the direction {@code toServer} names. */
    private void awaitUncut(Link link, boolean toServer) throws InterruptedException {
        lock.lock();
        try {
            while (!closed && (toServer ? cutToServer : cutToClient).test(link)) {
                healed.await(50, TimeUnit.MILLISECONDS);
            }
        } finally {
            lock.unlock();
        }
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0); // close() then sends RST
        } catch (SocketException ignored) {
            // already closed
        }
        close(s);
    }

    /** One proxied connection. */
    public final class Link {
        private final int id;
        private final Socket client;
        private final Socket server;
        private volatile boolean subscriber;
        private volatile boolean halfOpen;
        private final AtomicInteger pipesLeft = new AtomicInteger(2);

        private Link(int id, Socket client, Socket server) {
            this.id = id;
            this.client = client;
            this.server = server;
        }

        /**
         * Returns the link's number.
         *
         * @return from 1, in accept order
         */
        public int id() {
            return id;
        }

        /**
         * Returns the address the client connected from: on loopback, a process that binds its outgoing
         * connections to an address of its own ({@code 127.0.0.2}, say) is told apart by it, as a Redis replica
         * ({@code bind-source-addr}) or a Sentinel is.
         *
         * @return the client's address
         */
        public InetAddress client() {
            return client.getInetAddress();
        }

        /**
         * Tells whether this is a pub/sub connection.
         *
         * @return whether the client sent a Redis SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE on it
         */
        public boolean subscriber() {
            return subscriber;
        }

        @Override
        public String toString() {
            return "Link[" + id + " from " + client.getInetAddress().getHostAddress() + (subscriber ? ", pub/sub" : "")
                    + (halfOpen ? ", half-open" : "") + "]";
        }

        private void start() {
            pipe(true);
            pipe(false);
        }

        /** Copies one direction: a reader stamps chunks with their due time, a writer delivers them. */
        private void pipe(boolean toServer) {
            LinkedBlockingQueue<byte[]> chunks = new LinkedBlockingQueue<>();
            LinkedBlockingQueue<Long> due = new LinkedBlockingQueue<>();
            Socket from = toServer ? client : server;
            Socket to = toServer ? server : client;
            threads.execute(() -> {
                byte[] buf = new byte[CHUNK];
                try {
                    InputStream in = from.getInputStream();
                    for (;;) {
                        int n = in.read(buf);
                        if (n < 0) {
                            break;
                        }
                        if (halfOpen && toServer) {
                            continue; // the client talks to a server that is gone
                        }
                        byte[] chunk = java.util.Arrays.copyOf(buf, n);
                        if (toServer && !subscriber && containsSubscribe(chunk)) {
                            subscriber = true;
                        }
                        due.add(System.nanoTime() + latencyNanos);
                        chunks.add(chunk);
                    }
                } catch (IOException e) {
                    // reset or closed: the writer ends with what it has
                }
                due.add(0L);
                chunks.add(new byte[0]); // end of stream
            });
            threads.execute(() -> {
                try {
                    OutputStream out = to.getOutputStream();
                    for (;;) {
                        long at = due.take();
                        byte[] chunk = chunks.take();
                        if (chunk.length == 0) {
                            break;
                        }
                        long wait = at - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        awaitUncut(this, toServer);
                        if (halfOpen) {
                            continue; // nothing reaches either side any more
                        }
                        out.write(chunk);
                        out.flush();
                    }
                    if (!halfOpen) {
                        to.shutdownOutput(); // pass the end of stream on, as TCP would after the held bytes
                    }
                } catch (IOException | InterruptedException e) {
                    // reset or closed
                } finally {
                    if (pipesLeft.decrementAndGet() == 0 && !halfOpen) {
                        close(client);
                        close(server);
                        links.remove(this);
                    }
                }
            });
        }

        private void reset() {
            FaultProxy.reset(client);
            FaultProxy.reset(server);
            links.remove(this);
        }

        private void halfOpen() {
            halfOpen = true;
            close(server);
        }
    }

    /** RESP commands that make a connection a pub/sub one: each name as a bulk string, first in its command. */
    private static final byte[][] SUBSCRIBE_COMMANDS = {
        "\r\n$9\r\nSUBSCRIBE\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII),
        "\r\n$10\r\nSSUBSCRIBE\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII),
        "\r\n$10\r\nPSUBSCRIBE\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII)};

    /**
     * Whether {@code chunk} holds a SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE command (matched in its RESP form,
     * {@code *<n>\r\n$9\r\nSUBSCRIBE\r\n}, so that a script whose text mentions the word does not count).
     */
    private static boolean containsSubscribe(byte[] chunk) {
        for (byte[] word : SUBSCRIBE_COMMANDS) {
            outer:
            for (int i = 0; i + word.length <= chunk.length; i++) {
                for (int j = 0; j < word.length; j++) {
                    if (Character.toUpperCase(chunk[i + j]) != word[j]) {
                        continue outer;
                    }
                }
                return true;
            }
        }
        return false;
    }
}
