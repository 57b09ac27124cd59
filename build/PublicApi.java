import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The public API of one published module, read from its compiled classes and compared with the record committed
 * beside its pom ({@code api/<artifactId>.api}). The parent pom runs it in each published module's {@code verify}
 * phase (exec-maven-plugin); README, "Building", says how to update a record.
 *
 * <pre>
 * java --source 21 build/PublicApi.java ARTIFACT_ID CLASSES_DIR RECORD_FILE UPDATE(true|false) CLASSPATH
 * </pre>
 *
 * <p>What counts: the packages the module exports to everyone (a qualified export is not API), their public types
 * and the public and protected types nested in them, and those types' public members, plus protected ones where a
 * user can subclass (a class that is neither final nor an enum). Public and protected members that a type inherits
 * from a supertype users cannot see (package-private, or in a package not exported) are listed under the type.
 * Synthetic members are left out, but for kotlinc's default-argument stubs ({@code f$default}), which Kotlin callers
 * link to: they are listed as {@code synthetic}.
 *
 * <p>The class files are read here byte by byte (module-info too) rather than through reflection or the JDK's
 * class-file API, so the record depends on nothing but the class files: the same on every JDK, with no class loaded
 * or initialised. Types are written in Java's syntax with their binary names ({@code dev.sema.Semaphore$Builder});
 * a class directly in {@code java.lang} goes without its package.
 */
public class PublicApi {

    public static void main(String[] args) throws IOException {
        if (args.length != 5) {
            System.err.println("usage: java --source 21 build/PublicApi.java ARTIFACT_ID CLASSES_DIR RECORD_FILE"
                    + " UPDATE(true|false) CLASSPATH");
            System.exit(2);
        }
        String artifactId = args[0];
        Path classes = Path.of(args[1]);
        Path record = Path.of(args[2]);
        boolean update = args[3].isEmpty() || Boolean.parseBoolean(args[3]);
        String updateCommand = "mvn -pl " + artifactId + " -am verify -DskipTests -Dsema.api.update";

        ClassPath classPath = new ClassPath(classes, args[4]);
        Api api = new Api(classPath, classes);
        List<String> actual = api.render();
        List<String> header = header(artifactId, api.moduleName, api.exported, updateCommand);

        List<String> file = Files.exists(record) ? Files.readAllLines(record, StandardCharsets.UTF_8) : null;
        List<String> recorded = file == null ? null : content(file);
        List<String> expected = new ArrayList<>(header);
        expected.addAll(actual);
        Path absolute = record.toAbsolutePath().normalize();
        String shown = absolute.getNameCount() > 3 // MODULE/api/MODULE.api, as the repository root sees it
                ? absolute.subpath(absolute.getNameCount() - 3, absolute.getNameCount()).toString()
                : absolute.toString();
        if (actual.equals(recorded) && (!update || expected.equals(file))) { // the header is not checked
            System.out.println("Public API of " + artifactId + " matches " + shown
                    + " (" + count(api.typeCount, "type") + ", " + count(api.memberCount, "member") + ")");
            return;
        }
        if (update) {
            Files.createDirectories(record.getParent());
            Files.write(record, expected, StandardCharsets.UTF_8);
            System.out.println("Public API of " + artifactId + " written to " + shown
                    + (recorded == null ? "" : actual.equals(recorded) ? " (its header)"
                            : " (" + Diff.summary(recorded, actual) + ")")
                    + ": commit it with the change");
            return;
        }
        System.out.println();
        if (recorded == null) {
            System.out.println("The public API of " + artifactId + " has no record: " + shown
                    + " is missing. To write it, run from the repository root:");
        } else {
            System.out.println("The public API of " + artifactId + " differs from its record, " + shown
                    + " (- recorded, + compiled; " + Diff.summary(recorded, actual) + "):");
            System.out.println();
            Diff.print(recorded, actual, shown);
            System.out.println();
            System.out.println("If the change is intended, update the record and commit it with the change."
                    + " From the repository root:");
        }
        System.out.println();
        System.out.println("    " + updateCommand);
        System.out.println();
        System.exit(1);
    }

    static String count(long n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }

    static List<String> header(String artifactId, String moduleName, Set<String> exported, String updateCommand) {
        return List.of(
                "# The public API of " + artifactId + (moduleName == null ? "" : " (module " + moduleName + ")")
                        + ", exported packages " + String.join(", ", exported) + ".",
                "# Written by build/PublicApi.java from the compiled classes; `mvn verify` fails while they differ.",
                "# After an intended change, rewrite it with the command below and commit it in the same commit:",
                "#     " + updateCommand,
                "# One block per public type: its declaration, then enum constants in declaration order, fields,",
                "# constructors and methods by name. Binary compatibility with the last release: japicmp, whose",
                "# baseline is the property sema.api.baseline in the parent pom (README, \"Building\").",
                "");
    }

    /** The lines that count: a record's lines without its comment header. */
    static List<String> content(List<String> lines) {
        int i = 0;
        while (i < lines.size() && (lines.get(i).startsWith("#") || lines.get(i).isEmpty())) {
            i++;
        }
        List<String> rest = new ArrayList<>(lines.subList(i, lines.size()));
        while (!rest.isEmpty() && rest.get(rest.size() - 1).isEmpty()) {
            rest.remove(rest.size() - 1);
        }
        return rest;
    }

    // ---------------------------------------------------------------------------------------------------------
    // The API of one module, rendered.

    static final int PUBLIC = 0x0001, PROTECTED = 0x0004, STATIC = 0x0008, FINAL = 0x0010,
            BRIDGE = 0x0040, VARARGS = 0x0080, INTERFACE = 0x0200, ABSTRACT = 0x0400, SYNTHETIC = 0x1000,
            ANNOTATION = 0x2000, ENUM = 0x4000;

    static final class Api {
        final ClassPath classPath;
        final String moduleName;
        final Set<String> exported = new LinkedHashSet<>(); // dotted package names
        final List<ClassFile> types = new ArrayList<>();
        int typeCount, memberCount;

        Api(ClassPath classPath, Path classes) throws IOException {
            this.classPath = classPath;
            Path moduleInfo = classes.resolve("module-info.class");
            Set<String> packages = new TreeSet<>();
            if (Files.exists(moduleInfo)) {
                ClassFile descriptor = ClassFile.parse(Files.readAllBytes(moduleInfo), null);
                moduleName = descriptor.moduleName;
                packages.addAll(descriptor.exports);
            } else { // an automatic module: every package is exported
                moduleName = null;
                try (Stream<Path> files = Files.walk(classes)) {
                    files.filter(f -> f.toString().endsWith(".class")).forEach(f -> {
                        Path dir = classes.relativize(f).getParent();
                        if (dir != null) {
                            packages.add(dir.toString().replace(f.getFileSystem().getSeparator(), "."));
                        }
                    });
                }
            }
            exported.addAll(packages);
            for (String pkg : exported) {
                Path dir = classes.resolve(pkg.replace('.', '/'));
                if (!Files.isDirectory(dir)) {
                    continue;
                }
                try (Stream<Path> files = Files.list(dir)) {
                    for (Path f : files.filter(f -> f.toString().endsWith(".class")).sorted().toList()) {
                        String name = pkg.replace('.', '/') + "/"
                                + f.getFileName().toString().replaceFirst("\\.class$", "");
                        ClassFile c = classPath.find(name);
                        if (c != null && classPath.isApi(c)) {
                            types.add(c);
                        }
                    }
                }
            }
            types.sort(Comparator.comparing(c -> c.name));
        }

        List<String> render() {
            List<String> out = new ArrayList<>();
            for (ClassFile c : types) {
                if (!out.isEmpty()) {
                    out.add("");
                }
                out.add(declaration(c));
                typeCount++;
                for (String line : members(c)) {
                    out.add("  " + line);
                    memberCount++;
                }
            }
            return out;
        }

        String declaration(ClassFile c) {
            int flags = c.ownFlags();
            StringBuilder b = new StringBuilder();
            if (c.deprecated) {
                b.append("@Deprecated ");
            }
            b.append((flags & PUBLIC) != 0 ? "public " : "protected ");
            String kind = c.kind();
            boolean nested = c.outer() != null;
            if (nested && (flags & STATIC) != 0 && kind.equals("class")) {
                b.append("static ");
            }
            if (kind.equals("class") && (flags & ABSTRACT) != 0) {
                b.append("abstract ");
            }
            if (kind.equals("class") && (flags & FINAL) != 0) {
                b.append("final ");
            }
            boolean sealed = !c.permitted.isEmpty() && !kind.equals("enum");
            if (sealed) {
                b.append("sealed ");
            } else if ((kind.equals("class") || kind.equals("interface")) && (flags & FINAL) == 0
                    && c.supertypes().stream().map(classPath::find)
                            .anyMatch(s -> s != null && !s.permitted.isEmpty())) {
                b.append("non-sealed ");
            }
            b.append(kind).append(' ').append(display(c.name));

            Sig sig = c.signature == null ? null : new Sig(c.signature);
            if (sig != null) {
                b.append(sig.typeParameters());
            }
            if (kind.equals("record")) {
                List<String> components = new ArrayList<>();
                for (Member rc : c.components) {
                    components.add(new Sig(rc.signature != null ? rc.signature : rc.descriptor).javaType()
                            + " " + rc.name);
                }
                b.append('(').append(String.join(", ", components)).append(')');
            }
            String superclass;
            List<String> interfaces = new ArrayList<>();
            if (sig != null) {
                superclass = sig.referenceType();
                while (sig.more()) {
                    interfaces.add(sig.referenceType());
                }
            } else {
                superclass = c.superName == null ? null : display(c.superName);
                for (String i : c.interfaces) {
                    interfaces.add(display(i));
                }
            }
            if (kind.equals("class") && superclass != null && !superclass.equals("Object")) {
                b.append(" extends ").append(superclass);
            }
            if (kind.equals("@interface")) {
                interfaces.remove("java.lang.annotation.Annotation");
            }
            if (!interfaces.isEmpty()) {
                b.append(kind.equals("interface") || kind.equals("@interface") ? " extends " : " implements ")
                        .append(String.join(", ", interfaces));
            }
            if (sealed) {
                b.append(" permits ").append(String.join(", ", c.permitted.stream().map(PublicApi::display)
                        .sorted().toList()));
            }
            return b.toString();
        }

        List<String> members(ClassFile c) {
            boolean extensible = c.kind().equals("class") && (c.ownFlags() & FINAL) == 0;
            record Line(int kind, int order, String name, String text) { }
            List<Line> lines = new ArrayList<>();
            Set<String> seen = new HashSet<>();
            List<Owned> all = new ArrayList<>();
            for (Member f : c.fields) {
                all.add(new Owned(c, f, false, Map.of()));
            }
            for (Member m : c.methods) {
                all.add(new Owned(c, m, true, Map.of()));
            }
            for (Owned o : all) {
                if ((o.member.flags & (SYNTHETIC | BRIDGE)) == 0) { // javac's public bridge to an inherited
                    seen.add(o.key());                               // method does not declare it here
                }
            }
            inherit(c, Map.of(), seen, all, new HashSet<>());
            int enumIndex = 0;
            for (Owned o : all) {
                Member m = o.member;
                boolean visible = (m.flags & PUBLIC) != 0 || ((m.flags & PROTECTED) != 0 && extensible);
                if (!visible || ((m.flags & (SYNTHETIC | BRIDGE)) != 0 && !kotlinDefaults(m))
                        || m.name.equals("<clinit>")) {
                    continue;
                }
                if (!o.method && (m.flags & ENUM) != 0) {
                    lines.add(new Line(0, enumIndex++, m.name, "enum constant " + m.name));
                } else if (!o.method) {
                    lines.add(new Line(1, 0, m.name, field(o)));
                } else if (m.name.equals("<init>")) {
                    lines.add(new Line(2, 0, "", method(o, c)));
                } else {
                    lines.add(new Line(3, 0, m.name, method(o, c)));
                }
            }
            // by name, then parameter list: overloads stand together, shortest first
            lines.sort(Comparator.comparingInt(Line::kind).thenComparingInt(Line::order)
                    .thenComparing(Line::name)
                    .thenComparing(l -> l.text.indexOf('(') < 0 ? "" : l.text.substring(l.text.indexOf('(')))
                    .thenComparing(Line::text));
            return lines.stream().map(Line::text).toList();
        }

        /**
         * Adds the members that {@code c} inherits from supertypes users cannot see, and so can reach only through
         * it, with the type arguments {@code c} gives those supertypes ({@code bindings}: c's own type variables).
         */
        void inherit(ClassFile c, Map<String, String> bindings, Set<String> seen, List<Owned> out,
                Set<String> visited) {
            Map<String, List<String>> arguments = new HashMap<>();
            if (c.signature != null) {
                Sig sig = new Sig(c.signature, bindings);
                sig.typeParameters();
                sig.bindings.putAll(bindings); // the class's own type variables are the ones bound
                while (sig.more()) {
                    List<String> args = new ArrayList<>();
                    arguments.put(sig.classType(args), args);
                }
            }
            for (String superName : c.supertypes()) {
                ClassFile s = classPath.find(superName);
                if (s == null || !visited.add(s.name) || classPath.isApi(s)) {
                    continue; // a JDK type, a dependency's, or a type with its own record
                }
                Map<String, String> inS = new HashMap<>();
                List<String> args = arguments.getOrDefault(superName, List.of());
                List<String> names = s.signature == null ? List.of() : new Sig(s.signature).typeParameterNames();
                for (int i = 0; i < names.size() && i < args.size(); i++) {
                    inS.put(names.get(i), args.get(i));
                }
                boolean fromInterface = (s.flags & INTERFACE) != 0;
                for (Member f : s.fields) {
                    Owned o = new Owned(s, f, false, inS);
                    if (seen.add(o.key())) {
                        out.add(o);
                    }
                }
                for (Member m : s.methods) {
                    if (m.name.equals("<init>") || (fromInterface && (m.flags & STATIC) != 0)) {
                        continue; // never inherited
                    }
                    Owned o = new Owned(s, m, true, inS);
                    if ((m.flags & (SYNTHETIC | BRIDGE)) == 0 && seen.add(o.key())) {
                        out.add(o);
                    }
                }
                inherit(s, inS, seen, out, visited);
            }
        }

        String field(Owned o) {
            Member m = o.member;
            StringBuilder b = modifiers(m);
            if ((m.flags & STATIC) != 0) {
                b.append("static ");
            }
            if ((m.flags & FINAL) != 0) {
                b.append("final ");
            }
            b.append(new Sig(m.signature != null ? m.signature : m.descriptor, o.bindings).javaType())
                    .append(' ').append(m.name);
            if (m.constant != null) {
                b.append(" = ").append(constant(m.descriptor, m.constant));
            }
            return b.toString();
        }

        /** {@code o.owner} declares the method; {@code in} is the type whose block lists it. */
        String method(Owned o, ClassFile in) {
            Member m = o.member;
            StringBuilder b = modifiers(m);
            boolean inInterface = (o.owner.flags & INTERFACE) != 0;
            if ((m.flags & STATIC) != 0) {
                b.append("static ");
            } else if (inInterface) {
                b.append((m.flags & ABSTRACT) != 0 ? "abstract " : "default ");
            } else if ((m.flags & ABSTRACT) != 0) {
                b.append("abstract ");
            }
            if ((m.flags & FINAL) != 0 && (in.ownFlags() & FINAL) == 0) {
                b.append("final "); // in a final class, every method is final in effect
            }
            Sig sig = new Sig(m.signature != null ? m.signature : m.descriptor, o.bindings);
            String typeParameters = sig.typeParameters();
            if (!typeParameters.isEmpty()) {
                b.append(typeParameters).append(' ');
            }
            sig.expect('(');
            List<String> parameters = new ArrayList<>();
            while (sig.peek() != ')') {
                parameters.add(sig.javaType());
            }
            sig.expect(')');
            String result = sig.javaType();
            List<String> throwsList = new ArrayList<>();
            while (sig.more() && sig.peek() == '^') {
                sig.expect('^');
                throwsList.add(sig.referenceType());
            }
            if (throwsList.isEmpty()) {
                for (String e : m.exceptions) {
                    throwsList.add(display(e));
                }
            }
            if ((m.flags & VARARGS) != 0 && !parameters.isEmpty()) {
                String last = parameters.remove(parameters.size() - 1);
                parameters.add(last.substring(0, last.length() - 2) + "...");
            }
            if (m.name.equals("<init>")) {
                b.append(simpleName(in));
            } else {
                b.append(result).append(' ').append(m.name);
            }
            b.append('(').append(String.join(", ", parameters)).append(')');
            if (!throwsList.isEmpty()) {
                b.append(" throws ").append(String.join(", ", throwsList.stream().sorted().toList()));
            }
            if (m.annotationDefault != null) {
                b.append(" default ").append(m.annotationDefault);
            }
            return b.toString();
        }

        static StringBuilder modifiers(Member m) {
            StringBuilder b = new StringBuilder();
            if (m.deprecated) {
                b.append("@Deprecated ");
            }
            b.append((m.flags & PUBLIC) != 0 ? "public " : "protected ");
            return kotlinDefaults(m) ? b.append("synthetic ") : b;
        }

        /**
         * Whether {@code m} is kotlinc's synthetic stub for a function's or constructor's default arguments
         * ({@code f$default(..., int mask, Object)}, {@code <init>(..., int mask, DefaultConstructorMarker)}): Kotlin
         * code that leaves an argument out is compiled to a call of it, so it is API although Java cannot see it.
         */
        static boolean kotlinDefaults(Member m) {
            return (m.flags & SYNTHETIC) != 0 && (m.flags & BRIDGE) == 0
                    && (m.name.endsWith("$default") && (m.flags & STATIC) != 0
                        || m.name.equals("<init>") && m.descriptor.endsWith("Lkotlin/jvm/internal/DefaultConstructorMarker;)V"));
        }

        String simpleName(ClassFile c) {
            String[] outer = c.outer();
            return outer != null && outer[1] != null ? outer[1] : c.name.substring(c.name.lastIndexOf('/') + 1);
        }
    }

    /** A member as a type's block lists it: declared by {@code owner}, its type variables bound as the type sees them. */
    record Owned(ClassFile owner, Member member, boolean method, Map<String, String> bindings) {
        String key() {
            return (method ? "m " : "f ") + member.name + (method ? member.descriptor : "");
        }
    }

    /** A class name in the record's form: dots for slashes, no {@code java.lang.} before a class directly in it. */
    static String display(String internalName) {
        String dotted = internalName.replace('/', '.');
        if (dotted.startsWith("java.lang.") && dotted.indexOf('.', "java.lang.".length()) < 0) {
            return dotted.substring("java.lang.".length());
        }
        return dotted;
    }

    static String constant(String descriptor, Object value) {
        return switch (descriptor) {
            case "Z" -> ((Integer) value) != 0 ? "true" : "false";
            case "C" -> "'" + escape(String.valueOf((char) (int) (Integer) value), '\'') + "'";
            case "J" -> value + "L";
            case "F" -> {
                float f = (Float) value;
                yield Float.isNaN(f) ? "Float.NaN" : Float.isInfinite(f)
                        ? (f > 0 ? "Float.POSITIVE_INFINITY" : "Float.NEGATIVE_INFINITY") : f + "f";
            }
            case "D" -> {
                double d = (Double) value;
                yield Double.isNaN(d) ? "Double.NaN" : Double.isInfinite(d)
                        ? (d > 0 ? "Double.POSITIVE_INFINITY" : "Double.NEGATIVE_INFINITY") : String.valueOf(d);
            }
            case "Ljava/lang/String;" -> "\"" + escape((String) value, '"') + "\"";
            default -> String.valueOf(value); // B, S, I
        };
    }

    static String escape(String s, char quote) {
        StringBuilder b = new StringBuilder();
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (ch == quote) {
                        b.append('\\').append(ch);
                    } else if (ch < 0x20 || ch > 0x7e) {
                        String hex = Integer.toHexString(ch);
                        b.append("\\u").append("0".repeat(4 - hex.length())).append(hex);
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.toString();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Signatures and descriptors (JVMS 4.3, 4.7.9.1) to Java's syntax.

    static final class Sig {
        final String s;
        final Map<String, String> bindings; // type variable -> what to write for it
        int i;

        Sig(String s) {
            this(s, Map.of());
        }

        Sig(String s, Map<String, String> bindings) {
            this.s = s;
            this.bindings = new HashMap<>(bindings);
        }

        boolean more() {
            return i < s.length();
        }

        char peek() {
            return s.charAt(i);
        }

        void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + i + " of " + s);
            }
            i++;
        }

        /** {@code <T, X extends Exception>}, or nothing. */
        String typeParameters() {
            if (!more() || peek() != '<') {
                return "";
            }
            i++;
            List<String> parameters = new ArrayList<>();
            while (peek() != '>') {
                int colon = s.indexOf(':', i);
                String name = s.substring(i, colon);
                bindings.remove(name); // a method's own type variable hides its class's
                i = colon + 1;
                List<String> bounds = new ArrayList<>();
                if (peek() == 'L' || peek() == 'T' || peek() == '[') {
                    bounds.add(referenceType());
                }
                while (peek() == ':') {
                    i++;
                    bounds.add(referenceType());
                }
                if (bounds.equals(List.of("Object"))) {
                    bounds.clear();
                }
                parameters.add(bounds.isEmpty() ? name : name + " extends " + String.join(" & ", bounds));
            }
            i++;
            return "<" + String.join(", ", parameters) + ">";
        }

        List<String> typeParameterNames() {
            List<String> names = new ArrayList<>();
            for (String p : typeParameters().replaceAll("^<|>$", "").split(", ")) {
                names.add(p.split(" ", 2)[0]);
            }
            return names;
        }

        /** A class type signature: its binary name, its (last) type arguments into {@code args}. */
        String classType(List<String> args) {
            expect('L');
            StringBuilder name = new StringBuilder();
            while (true) {
                int start = i;
                while (peek() != '<' && peek() != '.' && peek() != ';') {
                    i++;
                }
                name.append(s, start, i);
                args.clear();
                if (peek() == '<') {
                    String rendered = typeArguments();
                    args.addAll(splitTopLevel(rendered.substring(1, rendered.length() - 1)));
                }
                if (peek() == ';') {
                    i++;
                    return name.toString();
                }
                i++;
                name.append('$');
            }
        }

        static List<String> splitTopLevel(String list) {
            List<String> parts = new ArrayList<>();
            int depth = 0, start = 0;
            for (int k = 0; k < list.length(); k++) {
                char ch = list.charAt(k);
                if (ch == '<') {
                    depth++;
                } else if (ch == '>') {
                    depth--;
                } else if (ch == ',' && depth == 0) {
                    parts.add(list.substring(start, k).trim());
                    start = k + 1;
                }
            }
            parts.add(list.substring(start).trim());
            return parts;
        }

        String javaType() {
            char c = s.charAt(i++);
            return switch (c) {
                case 'B' -> "byte";
                case 'C' -> "char";
                case 'D' -> "double";
                case 'F' -> "float";
                case 'I' -> "int";
                case 'J' -> "long";
                case 'S' -> "short";
                case 'Z' -> "boolean";
                case 'V' -> "void";
                default -> {
                    i--;
                    yield referenceType();
                }
            };
        }

        String referenceType() {
            char c = s.charAt(i++);
            switch (c) {
                case 'T': {
                    int end = s.indexOf(';', i);
                    String name = s.substring(i, end);
                    i = end + 1;
                    return bindings.getOrDefault(name, name);
                }
                case '[':
                    return javaType() + "[]";
                case 'L': {
                    StringBuilder b = new StringBuilder();
                    int start = i;
                    while (peek() != '<' && peek() != '.' && peek() != ';') {
                        i++;
                    }
                    b.append(display(s.substring(start, i)));
                    b.append(typeArguments());
                    while (peek() == '.') { // a class nested in a parameterized one
                        i++;
                        start = i;
                        while (peek() != '<' && peek() != '.' && peek() != ';') {
                            i++;
                        }
                        b.append('$').append(s, start, i).append(typeArguments());
                    }
                    expect(';');
                    return b.toString();
                }
                default:
                    throw new IllegalArgumentException("unexpected '" + c + "' at " + (i - 1) + " of " + s);
            }
        }

        String typeArguments() {
            if (peek() != '<') {
                return "";
            }
            i++;
            List<String> arguments = new ArrayList<>();
            while (peek() != '>') {
                char c = peek();
                if (c == '*') {
                    i++;
                    arguments.add("?");
                } else if (c == '+') {
                    i++;
                    arguments.add("? extends " + referenceType());
                } else if (c == '-') {
                    i++;
                    arguments.add("? super " + referenceType());
                } else {
                    arguments.add(referenceType());
                }
            }
            i++;
            return "<" + String.join(", ", arguments) + ">";
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // The class path: the module's classes first, then its dependencies (directories and jars).

    static final class ClassPath {
        final List<Root> roots = new ArrayList<>();
        final Map<String, ClassFile> cache = new HashMap<>();

        ClassPath(Path classes, String classPath) throws IOException {
            Set<Path> seen = new LinkedHashSet<>();
            seen.add(classes.toAbsolutePath().normalize());
            for (String entry : classPath.split(java.io.File.pathSeparator)) {
                if (!entry.isBlank()) {
                    seen.add(Path.of(entry).toAbsolutePath().normalize());
                }
            }
            for (Path p : seen) {
                if (Files.isDirectory(p)) {
                    roots.add(new Root(p, null));
                } else if (Files.isRegularFile(p)) {
                    roots.add(new Root(p, new ZipFile(p.toFile())));
                }
            }
        }

        /** The class file of {@code internalName}, or null for a class outside the class path (the JDK's). */
        ClassFile find(String internalName) {
            if (cache.containsKey(internalName)) {
                return cache.get(internalName);
            }
            ClassFile found = null;
            for (Root root : roots) {
                byte[] bytes = root.read(internalName + ".class");
                if (bytes != null) {
                    found = ClassFile.parse(bytes, root);
                    break;
                }
            }
            cache.put(internalName, found);
            return found;
        }

        /** Whether users see {@code c}: public (or protected where they can subclass) all the way out, in a package its module exports to everyone. */
        boolean isApi(ClassFile c) {
            int slash = c.name.lastIndexOf('/');
            String pkg = slash < 0 ? "" : c.name.substring(0, slash).replace('/', '.');
            Set<String> exported = c.root.exported();
            if (exported != null && !exported.contains(pkg)) {
                return false;
            }
            for (ClassFile t = c; ; ) {
                String[] outer = t.outer();
                int flags = t.ownFlags();
                if (outer == null) {
                    return (flags & PUBLIC) != 0;
                }
                if (outer[0] == null) {
                    return false; // local or anonymous
                }
                ClassFile enclosing = find(outer[0]);
                if (enclosing == null) {
                    return false;
                }
                boolean reachable = (flags & PUBLIC) != 0 || ((flags & PROTECTED) != 0
                        && (enclosing.flags & (FINAL | INTERFACE)) == 0 && !enclosing.kind().equals("enum"));
                if (!reachable) {
                    return false;
                }
                t = enclosing;
            }
        }
    }

    static final class Root {
        final Path path;
        final ZipFile zip;
        private Set<String> exported;
        private boolean exportedRead;

        Root(Path path, ZipFile zip) {
            this.path = path;
            this.zip = zip;
        }

        byte[] read(String name) {
            try {
                if (zip == null) {
                    Path f = path.resolve(name);
                    return Files.isRegularFile(f) ? Files.readAllBytes(f) : null;
                }
                ZipEntry e = zip.getEntry(name);
                if (e == null) {
                    return null;
                }
                try (InputStream in = zip.getInputStream(e)) {
                    return in.readAllBytes();
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** The packages its module exports to everyone; null for a root without module-info (all of them). */
        Set<String> exported() {
            if (!exportedRead) {
                exportedRead = true;
                byte[] info = read("module-info.class");
                if (info != null) {
                    exported = ClassFile.parse(info, this).exports;
                }
            }
            return exported;
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Class files (JVMS chapter 4): what the record needs, nothing more.

    static final class Member {
        int flags;
        String name, descriptor, signature;
        List<String> exceptions = List.of();
        Object constant;
        String annotationDefault;
        boolean deprecated;
    }

    static final class ClassFile {
        Root root;
        int flags;
        String name, superName, signature;
        List<String> interfaces = new ArrayList<>();
        List<Member> fields = new ArrayList<>(), methods = new ArrayList<>(), components = new ArrayList<>();
        List<String> permitted = new ArrayList<>();
        boolean deprecated;
        /** For module-info: the module's name and the packages it exports to everyone (dotted). */
        String moduleName;
        Set<String> exports = new TreeSet<>();
        /** From InnerClasses, this class's own entry: its flags, outer class and simple name. */
        Integer innerFlags;
        String innerOuter, innerName;

        int ownFlags() {
            return innerFlags != null ? innerFlags : flags;
        }

        /** {outer class, simple name} when nested (outer class null when local or anonymous), else null. */
        String[] outer() {
            return innerFlags == null ? null : new String[] {innerOuter, innerName};
        }

        String kind() {
            if ((flags & ANNOTATION) != 0) {
                return "@interface";
            }
            if ((flags & INTERFACE) != 0) {
                return "interface";
            }
            if ((flags & ENUM) != 0 && "java/lang/Enum".equals(superName)) {
                return "enum";
            }
            if ("java/lang/Record".equals(superName) && (flags & FINAL) != 0) {
                return "record";
            }
            return "class";
        }

        List<String> supertypes() {
            List<String> all = new ArrayList<>();
            if (superName != null) {
                all.add(superName);
            }
            all.addAll(interfaces);
            return all;
        }

        static ClassFile parse(byte[] bytes, Root root) {
            try {
                return new Reader(bytes).read(root);
            } catch (IOException | RuntimeException e) {
                throw new IllegalStateException("cannot read a class file"
                        + (root == null ? "" : " in " + root.path) + ": " + e, e);
            }
        }
    }

    static final class Reader {
        final DataInputStream in;
        Object[] pool;
        int[] tags;

        Reader(byte[] bytes) {
            in = new DataInputStream(new ByteArrayInputStream(bytes));
        }

        ClassFile read(Root root) throws IOException {
            if (in.readInt() != 0xCAFEBABE) {
                throw new IOException("not a class file");
            }
            in.readUnsignedShort(); // minor
            in.readUnsignedShort(); // major
            int count = in.readUnsignedShort();
            pool = new Object[count];
            tags = new int[count];
            for (int i = 1; i < count; i++) {
                int tag = in.readUnsignedByte();
                tags[i] = tag;
                switch (tag) {
                    case 1 -> pool[i] = in.readUTF();
                    case 3 -> pool[i] = in.readInt();
                    case 4 -> pool[i] = in.readFloat();
                    case 5 -> {
                        pool[i] = in.readLong();
                        i++;
                    }
                    case 6 -> {
                        pool[i] = in.readDouble();
                        i++;
                    }
                    case 7, 8, 16, 19, 20 -> pool[i] = in.readUnsignedShort();
                    case 9, 10, 11, 12, 17, 18 -> in.readInt();
                    case 15 -> {
                        in.readUnsignedByte();
                        in.readUnsignedShort();
                    }
                    default -> throw new IOException("constant pool tag " + tag);
                }
            }
            ClassFile c = new ClassFile();
            c.root = root;
            c.flags = in.readUnsignedShort();
            c.name = className(in.readUnsignedShort());
            int superIndex = in.readUnsignedShort();
            c.superName = superIndex == 0 ? null : className(superIndex);
            int interfaces = in.readUnsignedShort();
            for (int i = 0; i < interfaces; i++) {
                c.interfaces.add(className(in.readUnsignedShort()));
            }
            for (int kind = 0; kind < 2; kind++) {
                int members = in.readUnsignedShort();
                for (int i = 0; i < members; i++) {
                    Member m = new Member();
                    m.flags = in.readUnsignedShort();
                    m.name = utf(in.readUnsignedShort());
                    m.descriptor = utf(in.readUnsignedShort());
                    int attributes = in.readUnsignedShort();
                    for (int a = 0; a < attributes; a++) {
                        String attribute = utf(in.readUnsignedShort());
                        int length = in.readInt();
                        switch (attribute) {
                            case "Signature" -> m.signature = utf(in.readUnsignedShort());
                            case "ConstantValue" -> {
                                int index = in.readUnsignedShort();
                                m.constant = tags[index] == 8 ? utf((Integer) pool[index]) : pool[index];
                            }
                            case "Deprecated" -> m.deprecated = true;
                            case "Exceptions" -> {
                                int n = in.readUnsignedShort();
                                List<String> exceptions = new ArrayList<>();
                                for (int e = 0; e < n; e++) {
                                    exceptions.add(className(in.readUnsignedShort()));
                                }
                                m.exceptions = exceptions;
                            }
                            case "AnnotationDefault" -> m.annotationDefault = elementValue();
                            default -> in.skipNBytes(length);
                        }
                    }
                    (kind == 0 ? c.fields : c.methods).add(m);
                }
            }
            int attributes = in.readUnsignedShort();
            for (int a = 0; a < attributes; a++) {
                String attribute = utf(in.readUnsignedShort());
                int length = in.readInt();
                switch (attribute) {
                    case "Signature" -> c.signature = utf(in.readUnsignedShort());
                    case "Deprecated" -> c.deprecated = true;
                    case "PermittedSubclasses" -> {
                        int n = in.readUnsignedShort();
                        for (int i = 0; i < n; i++) {
                            c.permitted.add(className(in.readUnsignedShort()));
                        }
                    }
                    case "InnerClasses" -> {
                        int n = in.readUnsignedShort();
                        for (int i = 0; i < n; i++) {
                            int inner = in.readUnsignedShort(), outer = in.readUnsignedShort(),
                                    simpleName = in.readUnsignedShort(), flags = in.readUnsignedShort();
                            if (className(inner).equals(c.name)) {
                                c.innerFlags = flags;
                                c.innerOuter = outer == 0 ? null : className(outer);
                                c.innerName = simpleName == 0 ? null : utf(simpleName);
                            }
                        }
                    }
                    case "Module" -> { // JVMS 4.7.25: the exports without a "to" are the API's packages
                        DataInputStream module = new DataInputStream(new ByteArrayInputStream(in.readNBytes(length)));
                        c.moduleName = className(module.readUnsignedShort());
                        module.readUnsignedShort(); // flags
                        module.readUnsignedShort(); // version
                        module.skipNBytes(6L * module.readUnsignedShort()); // requires
                        int exports = module.readUnsignedShort();
                        for (int i = 0; i < exports; i++) {
                            String pkg = className(module.readUnsignedShort()).replace('/', '.');
                            module.readUnsignedShort(); // flags
                            int targets = module.readUnsignedShort();
                            module.skipNBytes(2L * targets);
                            if (targets == 0) {
                                c.exports.add(pkg);
                            }
                        }
                    }
                    case "Record" -> {
                        int n = in.readUnsignedShort();
                        for (int i = 0; i < n; i++) {
                            Member rc = new Member();
                            rc.name = utf(in.readUnsignedShort());
                            rc.descriptor = utf(in.readUnsignedShort());
                            int rcAttributes = in.readUnsignedShort();
                            for (int r = 0; r < rcAttributes; r++) {
                                String rcAttribute = utf(in.readUnsignedShort());
                                int rcLength = in.readInt();
                                if (rcAttribute.equals("Signature")) {
                                    rc.signature = utf(in.readUnsignedShort());
                                } else {
                                    in.skipNBytes(rcLength);
                                }
                            }
                            c.components.add(rc);
                        }
                    }
                    default -> in.skipNBytes(length);
                }
            }
            return c;
        }

        String utf(int index) {
            return (String) pool[index];
        }

        String className(int index) {
            return utf((Integer) pool[index]);
        }

        /** An annotation element's default value (JVMS 4.7.16.1), in Java's syntax. */
        String elementValue() throws IOException {
            char tag = (char) in.readUnsignedByte();
            return switch (tag) {
                case 'B', 'I', 'S' -> String.valueOf(pool[in.readUnsignedShort()]);
                case 'C', 'Z', 'J', 'F', 'D' -> constant(String.valueOf(tag), pool[in.readUnsignedShort()]);
                case 's' -> constant("Ljava/lang/String;", pool[in.readUnsignedShort()]);
                case 'e' -> {
                    String type = new Sig(utf(in.readUnsignedShort())).javaType();
                    yield type + "." + utf(in.readUnsignedShort());
                }
                case 'c' -> new Sig(utf(in.readUnsignedShort())).javaType() + ".class";
                case '@' -> annotation();
                case '[' -> {
                    int n = in.readUnsignedShort();
                    List<String> values = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        values.add(elementValue());
                    }
                    yield "{" + String.join(", ", values) + "}";
                }
                default -> throw new IOException("element value tag " + tag);
            };
        }

        String annotation() throws IOException {
            String type = new Sig(utf(in.readUnsignedShort())).javaType();
            int n = in.readUnsignedShort();
            List<String> pairs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String name = utf(in.readUnsignedShort());
                pairs.add(name + " = " + elementValue());
            }
            return "@" + type + (pairs.isEmpty() ? "" : "(" + String.join(", ", pairs) + ")");
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // A line diff (longest common subsequence; a record has a few hundred lines), printed as unified hunks
    // headed by the declaration of the type they are in.

    static final class Diff {
        record Op(char kind, String line, int oldIndex) { }

        static List<Op> ops(List<String> a, List<String> b) {
            int[][] lcs = new int[a.size() + 1][b.size() + 1];
            for (int i = a.size() - 1; i >= 0; i--) {
                for (int j = b.size() - 1; j >= 0; j--) {
                    lcs[i][j] = a.get(i).equals(b.get(j)) ? lcs[i + 1][j + 1] + 1
                            : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
                }
            }
            List<Op> ops = new ArrayList<>();
            int i = 0, j = 0;
            while (i < a.size() || j < b.size()) {
                if (i < a.size() && j < b.size() && a.get(i).equals(b.get(j))) {
                    ops.add(new Op(' ', a.get(i), i));
                    i++;
                    j++;
                } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
                    ops.add(new Op('-', a.get(i), i)); // a changed line: the old one first, as diff shows it
                    i++;
                } else {
                    ops.add(new Op('+', b.get(j), i));
                    j++;
                }
            }
            return ops;
        }

        static String summary(List<String> a, List<String> b) {
            long added = ops(a, b).stream().filter(o -> o.kind == '+' && !o.line.isEmpty()).count();
            long removed = ops(a, b).stream().filter(o -> o.kind == '-' && !o.line.isEmpty()).count();
            return count(added, "line") + " added, " + removed + " removed";
        }

        static void print(List<String> a, List<String> b, String name) {
            List<Op> ops = ops(a, b);
            int context = 2;
            System.out.println("--- " + name + " (recorded)");
            System.out.println("+++ " + name + " (compiled classes)");
            int k = 0;
            while (k < ops.size()) {
                if (ops.get(k).kind == ' ') {
                    k++;
                    continue;
                }
                int start = Math.max(0, k - context);
                int end = k;
                // extend the hunk while the next change is within 2 * context lines
                int last = k;
                for (int m = k; m < ops.size() && m <= last + 2 * context; m++) {
                    if (ops.get(m).kind != ' ') {
                        last = m;
                    }
                }
                end = Math.min(ops.size(), last + context + 1);
                String type = null;
                for (int m = k; m >= 0; m--) {
                    String line = ops.get(m).line;
                    if (!line.isEmpty() && !line.startsWith(" ") && ops.get(m).kind != '+') {
                        type = line;
                        break;
                    }
                }
                System.out.println("@@ " + (type == null ? "" : type + " ") + "@@");
                for (int m = start; m < end; m++) {
                    System.out.println(ops.get(m).kind + ops.get(m).line);
                }
                k = end;
            }
        }
    }
}
