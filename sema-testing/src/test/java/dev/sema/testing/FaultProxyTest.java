package dev.sema.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The proxy tells its clients apart by the address they connect from, so that a partition can cut one kind of
 * client (a Redis replica, a Sentinel) and spare the others on the same port.
 */
@Timeout(30)
class FaultProxyTest {

    @Test
    void aPartitionBySourceAddressCutsOnlyTheClientsConnectingFromIt() throws Exception {
        try (ServerSocket echo = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
                FaultProxy proxy = FaultProxy.start("127.0.0.1", echo.getLocalPort())) {
            Thread.ofVirtual().start(() -> serveEcho(echo));
            InetAddress other = InetAddress.getByName("127.0.0.2");
            try (Socket a = connect(proxy, InetAddress.getByName("127.0.0.1"));
                    Socket b = connect(proxy, other)) {
                assertThat(roundTrip(a, 'x')).isTrue();
                assertThat(roundTrip(b, 'y')).isTrue();
                assertThat(proxy.links()).extracting(l -> l.client().getHostAddress())
                        .containsExactlyInAnyOrder("127.0.0.1", "127.0.0.2");

                proxy.partition(FaultProxy.Direction.BOTH, l -> l.client().equals(other));
                assertThat(roundTrip(a, 'p')).as("the spared client").isTrue();
                assertThat(roundTrip(b, 'q')).as("the client cut off").isFalse();

                proxy.heal();
                assertThat(b.getInputStream().read()).as("held byte, delivered on heal").isEqualTo('q');
            }
        }
    }

    private static Socket connect(FaultProxy proxy, InetAddress from) throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(from, 0));
        s.connect(new InetSocketAddress("127.0.0.1", proxy.port()), 2_000);
        s.setSoTimeout(500);
        return s;
    }

    /** Sends one byte and tells whether it came back within the socket's timeout. */
    private static boolean roundTrip(Socket s, char c) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(c);
        out.flush();
        try {
            return s.getInputStream().read() == c;
        } catch (SocketTimeoutException e) {
            return false;
        }
    }

    private static void serveEcho(ServerSocket server) {
        try {
            for (;;) {
                Socket s = server.accept();
                Thread.ofVirtual().start(() -> {
                    try (s) {
                        InputStream in = s.getInputStream();
                        OutputStream out = s.getOutputStream();
                        for (int b; (b = in.read()) >= 0;) {
                            out.write(b);
                            out.flush();
                        }
                    } catch (IOException e) {
                        // the test is over
                    }
                });
            }
        } catch (IOException e) {
            // closed at the end of the test
        }
    }
}
