package io.kafkars.oracle;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point of the reference oracle. The first argument names a subcommand;
 * the remaining arguments are passed to it. To add a subcommand, write a class
 * implementing {@link Command} in this package and register it in
 * {@link #COMMANDS}.
 */
public final class Main {
    /** A subcommand: gets the arguments after its name, returns the exit code. */
    public interface Command {
        int run(String[] args) throws Exception;
    }

    private static final Map<String, Command> COMMANDS = new LinkedHashMap<>();
    private static final Map<String, String> USAGE = new LinkedHashMap<>();

    static {
        register("generate", "<schemas-dir> <out-dir>", Generate::run);
        register("verify", "<dir>", Verify::run);
        register("records-generate", "<out-dir>", RecordsOracle::generate);
        register("records-verify", "<dir>", RecordsOracle::verify);
        register("group-generate", "<out-dir>", GroupOracle::generate);
        register("group-verify", "<dir>", GroupOracle::verify);
        // Register further subcommands here, e.g.
        // register("records", "<args>", RecordBatches::run);
    }

    private static void register(String name, String usage, Command command) {
        COMMANDS.put(name, command);
        USAGE.put(name, usage);
    }

    private Main() {}

    public static void main(String[] args) {
        if (args.length == 0 || !COMMANDS.containsKey(args[0])) {
            System.err.println("usage: oracle <subcommand> [args...]");
            for (Map.Entry<String, String> e : USAGE.entrySet()) {
                System.err.println("  oracle " + e.getKey() + " " + e.getValue());
            }
            System.exit(2);
            return;
        }
        quietSlf4j();
        int rc;
        try {
            rc = COMMANDS.get(args[0]).run(Arrays.copyOfRange(args, 1, args.length));
        } catch (UsageException e) {
            System.err.println("usage: oracle " + args[0] + " " + USAGE.get(args[0]));
            if (e.getMessage() != null) System.err.println(e.getMessage());
            rc = 2;
        } catch (Exception e) {
            e.printStackTrace();
            rc = 1;
        }
        System.exit(rc);
    }

    /**
     * kafka-clients brings slf4j-api without a binding, and slf4j 1.7 prints a
     * three-line "no binding" warning to stderr on first use. Initialise it once
     * with stderr muted so that a successful run prints only its results.
     */
    private static void quietSlf4j() {
        PrintStream err = System.err;
        try {
            System.setErr(new PrintStream(OutputStream.nullOutputStream()));
            Class.forName("org.slf4j.LoggerFactory").getMethod("getILoggerFactory").invoke(null);
        } catch (ReflectiveOperationException | LinkageError ignored) {
            // no slf4j on the classpath: nothing to silence
        } finally {
            System.setErr(err);
        }
    }

    /** Thrown by a subcommand for bad arguments. */
    public static final class UsageException extends Exception {
        public UsageException(String message) {
            super(message);
        }
    }
}
