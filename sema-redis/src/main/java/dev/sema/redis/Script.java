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
 *
 * <p>A partitioned semaphore (API.md §11a) has scripts of its own, the {@code P_} twins, whose prelude is told
 * so (the line {@value #PARTITIONED} becomes {@value #PARTITIONED_LINE}): {@code partitions.lua}
 * comes after common.lua and replaces those of its functions whose work differs, and an operation whose fast
 * path or rest differs has a {@code p_} file: its fast path before {@value #COMMON}, and after it its own rest,
 * or nothing for the operation's usual rest. An unpartitioned semaphore's scripts are the same as without
 * partitions, so they cost it nothing.
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
    UPGRADE("upgrade"),
    P_ACQUIRE("acquire", "p_acquire"),
    P_RELEASE("release", "p_release"),
    P_SPLIT("split", ""),
    P_MERGE("merge", ""),
    P_FORGET("forget", ""),
    P_CANCEL("cancel", ""),
    P_RENEW("renew", ""),
    P_SET_LIMIT("set_limit", ""),
    P_CLOSE("close", "p_close"),
    P_STATUS("status", "p_status");

    /** The line of an operation's file where common.lua goes (else: before the whole file). */
    static final String COMMON = "--@common";
    /** The line of prelude.lua that a partitioned semaphore's scripts replace with {@link #PARTITIONED_LINE}. */
    static final String PARTITIONED = "--@partitioned";
    static final String PARTITIONED_LINE = "partitioned = true";

    private final String file;
    /** For a partitioned semaphore's script: its {@code p_} file ("" for none); null for the others. */
    private final String partitioned;
    private volatile String source;
    private volatile String sha;

    Script(String file) {
        this(file, null);
    }

    Script(String file, String partitioned) {
        this.file = file;
        this.partitioned = partitioned;
    }

    /** This operation's script for a partitioned semaphore (itself if it is one). */
    Script partitioned() {
        return partitioned != null || this == UPGRADE ? this : valueOf("P_" + name());
    }

    String source() {
        String s = source;
        if (s == null) {
            if (this == UPGRADE) {
                s = read(file + ".lua");
            } else if (partitioned == null) {
                s = compose(read("prelude.lua"), read("common.lua"), read(file + ".lua"));
            } else {
                s = composePartitioned(read("prelude.lua"), read("common.lua"), read("partitions.lua"),
                        read(file + ".lua"), partitioned.isEmpty() ? "" : read(partitioned + ".lua"));
            }
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

    /**
     * A partitioned semaphore's script: prelude (telling it that it is one), the {@code p_} file's fast path,
     * common, partitions, then the {@code p_} file's rest, or the operation's own rest when the {@code p_} file
     * has none (or there is none).
     */
    static String composePartitioned(String prelude, String common, String partitions, String op, String pOp) {
        int at = pOp.indexOf(COMMON + "\n");
        String fast = at < 0 ? "" : pOp.substring(0, at);
        String rest = at < 0 ? pOp : pOp.substring(at + COMMON.length() + 1);
        if (rest.isBlank()) {
            int o = op.indexOf(COMMON + "\n");
            rest = o < 0 ? op : op.substring(o + COMMON.length() + 1);
        }
        return prelude.replace(PARTITIONED + "\n", PARTITIONED_LINE + "\n") + "\n" + fast + common + "\n" + partitions
                + "\n" + rest;
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
