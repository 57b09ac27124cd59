package dev.sema.examples;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough JSON for the demo to read the actuator's answers (the demo has no JSON library on its class path):
 * objects become {@code Map<String, Object>} in document order, arrays {@code List<Object>}, numbers
 * {@code Double}, and strings, booleans and {@code null} what they are.
 */
final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /**
     * Parses one JSON value.
     *
     * @throws IllegalArgumentException if {@code text} is not JSON, naming where
     */
    static Object parse(String text) {
        Json json = new Json(text);
        Object value = json.value();
        json.space();
        if (json.at != text.length()) {
            throw json.error("end of input");
        }
        return value;
    }

    /** The object at a path of member names, e.g. {@code object(root, "semaphores", "reports")}. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object root, String... path) {
        Object value = root;
        for (String name : path) {
            if (!(value instanceof Map<?, ?> map) || !map.containsKey(name)) {
                throw new IllegalArgumentException("no member " + name + " in " + value);
            }
            value = map.get(name);
        }
        if (!(value instanceof Map<?, ?>)) {
            throw new IllegalArgumentException("not an object: " + value);
        }
        return (Map<String, Object>) value;
    }

    /** The number member {@code name} of an object, as a long. */
    static long number(Map<String, Object> object, String name) {
        if (!(object.get(name) instanceof Double d)) {
            throw new IllegalArgumentException("no number " + name + " in " + object);
        }
        return (long) d.doubleValue();
    }

    /** The string member {@code name} of an object. */
    static String string(Map<String, Object> object, String name) {
        if (!(object.get(name) instanceof String s)) {
            throw new IllegalArgumentException("no string " + name + " in " + object);
        }
        return s;
    }

    private Object value() {
        space();
        if (at >= text.length()) {
            throw error("a value");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> members();
            case '[' -> elements();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> number();
        };
    }

    private Map<String, Object> members() {
        Map<String, Object> members = new LinkedHashMap<>();
        at++; // {
        space();
        if (peek('}')) {
            at++;
            return members;
        }
        for (;;) {
            space();
            if (!peek('"')) {
                throw error("a member name");
            }
            String name = string();
            space();
            expect(':');
            members.put(name, value());
            space();
            if (peek(',')) {
                at++;
            } else {
                expect('}');
                return members;
            }
        }
    }

    private List<Object> elements() {
        List<Object> elements = new ArrayList<>();
        at++; // [
        space();
        if (peek(']')) {
            at++;
            return elements;
        }
        for (;;) {
            elements.add(value());
            space();
            if (peek(',')) {
                at++;
            } else {
                expect(']');
                return elements;
            }
        }
    }

    private String string() {
        StringBuilder s = new StringBuilder();
        at++; // "
        while (at < text.length()) {
            char c = text.charAt(at++);
            if (c == '"') {
                return s.toString();
            }
            if (c != '\\') {
                s.append(c);
                continue;
            }
            if (at >= text.length()) {
                break;
            }
            char e = text.charAt(at++);
            switch (e) {
                case 'n' -> s.append('\n');
                case 't' -> s.append('\t');
                case 'r' -> s.append('\r');
                case 'b' -> s.append('\b');
                case 'f' -> s.append('\f');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("four hex digits");
                    }
                    s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                }
                default -> s.append(e); // \" \\ \/
            }
        }
        throw error("the end of the string");
    }

    private Double number() {
        int start = at;
        while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
            at++;
        }
        try {
            return Double.valueOf(text.substring(start, at));
        } catch (NumberFormatException e) {
            at = start;
            throw error("a value");
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error(word);
        }
        at += word.length();
        return value;
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private boolean peek(char c) {
        return at < text.length() && text.charAt(at) == c;
    }

    private void expect(char c) {
        if (!peek(c)) {
            throw error("'" + c + "'");
        }
        at++;
    }

    private IllegalArgumentException error(String expected) {
        String near = text.substring(at, Math.min(text.length(), at + 20));
        return new IllegalArgumentException("JSON: expected " + expected + " at offset " + at + " (near \"" + near
                + "\")");
    }
}
