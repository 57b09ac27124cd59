package dev.sema.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One Lua script, put together from resources of this package: {@code prelude.lua} (the meta hash and the
 * clock), the operation's fast path (the part of its file before the line {@value #COMMON}, if it has
 * one), {@code common.lua} (everything else every script shares), then the rest of the operation. A fast
 * path that returns early never defines common.lua's functions, which would cost Redis more than the
 * path itself. {@link #UPGRADE} is the exception: one file, run only when a script finds an older schema. Run as EVALSHA by its SHA-1, with EVAL as the fallback when the server does not know it
 * (NOSCRIPT: first use, or after a restart or {@code SCRIPT FLUSH}).
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
    STATUS("status"),
    /** Rewrites a semaphore of an older schema in place; alone, with the older schemas' keys (upgrade.lua). */
    UPGRADE("upgrade");

    /** The line of an operation's file where common.lua goes (else: before the whole file). */
    static final String COMMON = "--@common";

    private final String file;
    private volatile String source;
    private volatile String sha;

    Script(String file) {
        this.file = file;
    }

    String source() {
        String s = source;
        if (s == null) {
            s = this == UPGRADE ? read(file + ".lua") : compose(read("prelude.lua"), read("common.lua"), read(file + ".lua"));
            sha = sha1(s);
            source = s;
        }
        return s;
    }

    String sha() {
        source();
        return sha;
    }

    /** The script's text: prelude, the operation's fast path, common, the rest of the operation. */
    static String compose(String prelude, String common, String op) {
        int at = op.indexOf(COMMON + "\n");
        String fast = at < 0 ? "" : op.substring(0, at);
        String rest = at < 0 ? op : op.substring(at + COMMON.length() + 1);
        return prelude + "\n" + fast + common + "\n" + rest;
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
