package dev.sema;

import java.io.Serial;

/**
 * Thrown by {@link Gate#enter()} once the gate is closed. Passes already open are unaffected and may
 * still be closed.
 */
public class GateClosedException extends IllegalStateException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message names the gate and what was asked
     */
    public GateClosedException(String message) {
        super(message);
    }
}
