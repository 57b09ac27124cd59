package dev.sema.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One Lua script: the shared head ({@code common.lua}) followed by the operation's own part, both
 * resources of this package. Run as EVALSHA by its SHA-1, with EVAL as the fallback when the server
 * does not know it (NOSCRIPT: first use, or after a restart or {@code SCRIPT FLUSH}).
 */
enum Script {
    ACQUIRE("acquire"),
    RELEASE("release"),
    SPLIT("split"),
    MERGE("merge"),
    FORGET("forget"),
    CANCEL("cancel"),
    RENEW("renew"),
    SET_LIMIT("set_limit"),
    CLOSE("close"),
    STATUS("status");

    private final String file;
    private volatile String source;
    private volatile String sha;

    Script(String file) {
        this.file = file;
    }

    String source() {
        String s = source;
        if (s == null) {
            s = read("common.lua") + "\n" + read(file + ".lua");
            sha = sha1(s);
            source = s;
        }
        return s;
    }

    String sha() {
        source();
        return sha;
    }

    private static String read(String name) {
        try (InputStream in = Script.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("script resource " + name + " is missing from the sema-redis jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read script resource " + name, e);
        }
    }

    private static String sha1(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is not available", e);
        }
    }
}
