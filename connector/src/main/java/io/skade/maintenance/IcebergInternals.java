package io.skade.maintenance;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.net.URL;
import java.net.URLConnection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.SerializableTable;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.maintenance.api.MaintenanceTaskBuilder;
import org.apache.iceberg.flink.maintenance.api.SortedRewriteDataFiles;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner.PlannedGroup;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewriteRunner.ExecutedGroup;
import org.apache.iceberg.flink.maintenance.operator.RewriteGroups;
import org.apache.iceberg.flink.sink.IcebergSink;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where skade relies on internals of iceberg-flink ({@code iceberg-flink-2.1}) that
 * Iceberg does not publish as API, as they are in the release line skade is built and tested with,
 * {@value #TESTED_ICEBERG}.x. Each reliance is a {@link Seam}: methods of this class whose Javadoc
 * names the Iceberg internal and why skade needs it, and a shape (the classes and members it
 * reaches, with their types) that {@link #requireSeams} checks while a job is planned, and that
 * {@code IcebergInternalsTest} checks against the Iceberg the build uses. With an iceberg-flink
 * whose internals differ, a job therefore fails while it is planned, with a message naming the
 * version found, the one expected and what to do, instead of at the first seam it reaches while it
 * runs; an iceberg-flink whose internals match passes, whatever its version.
 *
 * <p>Two seams need Iceberg's package-private API and therefore live in Iceberg's packages, as thin
 * as they can be: {@link RewriteGroups} and {@link SortedRewriteDataFiles}. No other class of skade
 * uses them, or reaches a non-public member by reflection ({@code IcebergInternalsTest} holds that
 * too).
 */
public final class IcebergInternals {
  private static final Logger LOG = LoggerFactory.getLogger(IcebergInternals.class);

  /** The iceberg-flink release line skade is built and tested with: any {@code 1.11.x}. */
  public static final String TESTED_ICEBERG = "1.11";

  /** {@link #icebergFlinkVersion()} when no Iceberg jar tells its version. */
  static final String UNKNOWN = "unknown";

  /** Where every Iceberg jar records its version, beside its classes. */
  static final String BUILD_PROPERTIES = "iceberg-build.properties";

  /** Named, not referenced: a check must report a missing class, not fail on it. */
  static final String COMMITTABLE_SERIALIZER =
      "org.apache.iceberg.flink.sink.IcebergCommittableSerializer";

  /** The layout of Iceberg's committables {@link #committable} writes. */
  static final int COMMITTABLE_LAYOUT = 1;

  private static final String OPERATOR = "org.apache.iceberg.flink.maintenance.operator.";
  private static final String API = "org.apache.iceberg.flink.maintenance.api.";

  private IcebergInternals() {}

  /** A reliance of skade on iceberg-flink's internals, with the shape it needs. */
  public enum Seam {
    /** {@link #buildSink}: the package-private {@code IcebergSink.Builder.build()}. */
    SINK_BUILD(IcebergInternals::sinkBuildShape),
    /** {@link #committable}: Iceberg's package-private committable, made in its serial layout. */
    COMMITTABLE(IcebergInternals::committableShape),
    /**
     * {@link #plannedTable}, {@link #plannedFiles}, {@link #executed}, {@link #maintenanceMetrics}:
     * the package-private parts of Iceberg's Flink rewrite ({@link RewriteGroups}), and the rewrite
     * operators skade's rewriter runs between ({@link CompactionStages}).
     */
    REWRITE(IcebergInternals::rewriteShape),
    /**
     * {@link #sortedCompaction}: a task of skade's in Iceberg's {@code TableMaintenance} ({@link
     * SortedRewriteDataFiles}), fed by the sink's commits as Iceberg's sink feeds it.
     */
    MAINTENANCE_TASK(IcebergInternals::maintenanceTaskShape);

    private final Consumer<Shape> shape;

    Seam(Consumer<Shape> shape) {
      this.shape = shape;
    }

    /**
     * What differs between the iceberg-flink on the class path and the shape this seam needs; empty
     * when nothing does. Checks the classes and members only: it calls none of them.
     */
    public List<String> problems() {
      Shape check = new Shape();
      shape.accept(check);
      return check.problems();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Seam SINK_BUILD

  /**
   * Iceberg's sink as {@code builder} configures it, not yet added to a job.
   *
   * <p>Relies on {@code IcebergSink.Builder.build()}, which is package-private (called here by
   * reflection). Iceberg's builder builds its sink only inside {@code append()}, which also adds it
   * to the job under Iceberg's own names; skade's sink wraps Iceberg's instead, to add Flink's sink
   * metrics, the table as its lineage dataset and skade's catalog as the committer's.
   *
   * @param user who builds it, for messages ("skade sink for db.orders")
   * @throws RuntimeException what Iceberg's builder throws for a bad configuration, as it is
   * @throws IllegalStateException when the iceberg-flink on the class path has no such build
   */
  public static IcebergSink buildSink(IcebergSink.Builder builder, String user) {
    try {
      Method build = IcebergSink.Builder.class.getDeclaredMethod("build");
      build.setAccessible(true);
      return (IcebergSink) build.invoke(builder);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException failure) {
        throw failure;
      }
      throw new IllegalStateException(user + ": Iceberg's sink could not be built", e.getCause());
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw unsupported(user, List.of(IcebergSink.Builder.class.getName() + ".build(): " + e));
    }
  }

  private static void sinkBuildShape(Shape shape) {
    shape.method(IcebergSink.Builder.class, false, IcebergSink.class, "build");
  }

  // ---------------------------------------------------------------------------------------------
  // Seam COMMITTABLE

  /**
   * Iceberg's committable of the serialized {@code DeltaManifests} {@code manifest} (empty: no
   * files) for checkpoint {@code checkpointId} of operator {@code operatorId} in job {@code jobId},
   * made by {@code serializer} (Iceberg's committable serializer) from layout {@value
   * #COMMITTABLE_LAYOUT} of iceberg-flink {@value #TESTED_ICEBERG}: the two ids as UTF, the
   * checkpoint as a long, the manifest's length and bytes. Why: skade's pre-commit aggregator makes
   * the committables Iceberg's committer commits (Iceberg's own aggregator merges several
   * checkpoints into one), and their type is package-private.
   */
  public static Object committable(
      SimpleVersionedSerializer<Object> serializer,
      String jobId,
      String operatorId,
      long checkpointId,
      byte[] manifest)
      throws IOException {
    DataOutputSerializer out = new DataOutputSerializer(64 + manifest.length);
    out.writeUTF(jobId);
    out.writeUTF(operatorId);
    out.writeLong(checkpointId);
    out.writeInt(manifest.length);
    out.write(manifest);
    return serializer.deserialize(COMMITTABLE_LAYOUT, out.getCopyOfBuffer());
  }

  private static void committableShape(Shape shape) {
    Class<?> serializer = shape.type(COMMITTABLE_SERIALIZER);
    if (serializer == null) {
      return;
    }
    try {
      Object instance = serializer.getConstructor().newInstance();
      shape.require(
          instance instanceof SimpleVersionedSerializer<?> versioned
              && versioned.getVersion() == COMMITTABLE_LAYOUT,
          COMMITTABLE_SERIALIZER + " does not write layout " + COMMITTABLE_LAYOUT);
    } catch (ReflectiveOperationException | LinkageError e) {
      shape.require(false, COMMITTABLE_SERIALIZER + " cannot be made (" + e + ")");
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Seam REWRITE

  /**
   * The table as Iceberg's rewrite planner saw it, for skade's rewriter. Relies on the
   * package-private {@code DataFileRewritePlanner.PlannedGroup.table()} (through {@link
   * RewriteGroups}): Iceberg keeps a planned group's parts to its own package, because its
   * rewriter, which does not sort, is the only one it expects; skade's {@link SortingRewriteRunner}
   * writes each group in the table's order.
   */
  static SerializableTable plannedTable(PlannedGroup planned) {
    return RewriteGroups.table(planned);
  }

  /**
   * The files to rewrite and the output sizes the planner chose. Relies on the package-private
   * {@code PlannedGroup.group()}, for the reason {@link #plannedTable} gives.
   */
  static RewriteFileGroup plannedFiles(PlannedGroup planned) {
    return RewriteGroups.group(planned);
  }

  /**
   * {@code planned}, rewritten into {@code written}, for Iceberg's rewrite committer. Relies on the
   * package-private constructor of {@code DataFileRewriteRunner.ExecutedGroup} and on {@code
   * PlannedGroup.branch()} and {@code groupsPerCommit()}: Iceberg's committer takes only groups its
   * own rewriter made, and skade's rewriter hands its groups to that committer.
   */
  static ExecutedGroup executed(PlannedGroup planned, Set<DataFile> written) {
    return RewriteGroups.executed(planned, written);
  }

  /**
   * The metric group of maintenance task {@code taskName} ({@code taskIndex}) of {@code tableName},
   * where Iceberg's rewriter counts its errors. Relies on the package-private {@code
   * TableMaintenanceMetrics.groupFor}: skade's rewriter counts its errors where Iceberg's would, so
   * dashboards of Iceberg's maintenance see them.
   */
  static MetricGroup maintenanceMetrics(
      RuntimeContext context, String tableName, String taskName, int taskIndex) {
    return RewriteGroups.metrics(context, tableName, taskName, taskIndex);
  }

  private static void rewriteShape(Shape shape) {
    Class<?> planned = shape.type(OPERATOR + "DataFileRewritePlanner$PlannedGroup");
    shape.method(planned, false, SerializableTable.class, "table");
    shape.method(planned, false, RewriteFileGroup.class, "group");
    shape.method(planned, false, String.class, "branch");
    shape.method(planned, false, int.class, "groupsPerCommit");
    shape.constructor(
        shape.type(OPERATOR + "DataFileRewriteRunner$ExecutedGroup"),
        long.class,
        int.class,
        RewriteFileGroup.class);
    shape.method(
        shape.type(OPERATOR + "TableMaintenanceMetrics"),
        true,
        MetricGroup.class,
        "groupFor",
        RuntimeContext.class,
        String.class,
        String.class,
        int.class);
    shape.samePackage(shape.type(OPERATOR + "RewriteGroups"), planned);
    // The operators (public, but Iceberg's internals) CompactionStages runs the rewriter between.
    shape.constructor(
        shape.type(OPERATOR + "DataFileRewritePlanner"),
        String.class,
        String.class,
        int.class,
        TableLoader.class,
        int.class,
        long.class,
        Map.class,
        SerializableSupplier.class,
        String.class);
    shape.constructor(
        shape.type(OPERATOR + "DataFileRewriteCommitter"),
        String.class,
        String.class,
        int.class,
        TableLoader.class,
        String.class);
    shape.staticField(shape.type(OPERATOR + "TaskResultAggregator"), "ERROR_STREAM");
  }

  // ---------------------------------------------------------------------------------------------
  // Seam MAINTENANCE_TASK

  /**
   * Iceberg's {@code RewriteDataFiles} maintenance task whose rewriter writes each group in the
   * table's order ({@link SortedRewriteDataFiles}), for Iceberg's {@code TableMaintenance};
   * schedule it with its {@code scheduleOn...} methods.
   *
   * <p>Relies on {@code MaintenanceTaskBuilder}'s package-private {@code append} and {@code
   * maintenanceTaskName}, which {@code TableMaintenance} calls, and on its package-private {@code
   * setSlotSharingGroup}: Iceberg's maintenance takes only tasks of its own package, and its {@code
   * RewriteDataFiles} has no hook for another rewriter, while skade's rewriter must sort (see
   * {@link SortingRewriteRunner}).
   *
   * @param planOptions options of Iceberg's {@code BinPackRewriteFilePlanner}
   */
  public static MaintenanceTaskBuilder<?> sortedCompaction(Map<String, String> planOptions) {
    return SortedRewriteDataFiles.builder(planOptions);
  }

  private static void maintenanceTaskShape(Shape shape) {
    Class<?> task = shape.type(API + "MaintenanceTaskBuilder");
    Class<?> sorted = shape.type(API + "SortedRewriteDataFiles");
    shape.samePackage(sorted, task);
    shape.method(task, false, DataStream.class, "append", DataStream.class);
    shape.method(task, false, String.class, "maintenanceTaskName");
    shape.implementsEveryAbstractMethod(sorted, task);
    shape.method(task, false, String.class, "tableName");
    shape.method(task, false, String.class, "taskName");
    shape.method(task, false, int.class, "index");
    shape.method(task, false, TableLoader.class, "tableLoader");
    shape.method(task, false, String.class, "uidSuffix");
    shape.method(task, false, Integer.class, "parallelism");
    shape.method(task, false, String.class, "operatorName", String.class);
    shape.method(
        task,
        false,
        SingleOutputStreamOperator.class,
        "setSlotSharingGroup",
        SingleOutputStreamOperator.class);
    shape.constructor(
        shape.type(OPERATOR + "TaskResultAggregator"), String.class, String.class, int.class);
    // What skade's sink feeds the maintenance with, as Iceberg's sink does.
    shape.constructor(
        shape.type("org.apache.iceberg.flink.sink.CommittableToTableChangeConverter"),
        FileIO.class,
        String.class,
        Map.class);
  }

  // ---------------------------------------------------------------------------------------------
  // The check while a job is planned

  /**
   * Checks, while a job is planned, that the iceberg-flink on the class path has the shape {@code
   * seams} need; passes when it has, logging a warning when its version is not {@value
   * #TESTED_ICEBERG}.x.
   *
   * @param user the job's part that needs them, for the message ("skade sink for db.orders")
   * @throws IllegalStateException naming the iceberg-flink version found, the one skade is built
   *     and tested with, what differs, and what to do
   */
  public static void requireSeams(String user, Seam... seams) {
    List<String> problems = new ArrayList<>();
    for (Seam seam : seams) {
      problems.addAll(seam.problems());
    }
    requireSeams(user, FoundVersion.VERSION, problems);
  }

  /**
   * The decision of {@link #requireSeams(String, Seam...)} on the iceberg-flink {@code version}
   * found and the {@code problems} its shape has: it fails on a problem, whatever the version.
   */
  static void requireSeams(String user, String version, List<String> problems) {
    if (!problems.isEmpty()) {
      throw unsupported(user, version, problems);
    }
    if (!isTested(version)) {
      LOG.warn(
          "{}: iceberg-flink {} is on the class path; skade is built and tested with {}.x. The"
              + " Iceberg internals skade relies on have the shape it needs, so the job goes on.",
          user,
          version,
          TESTED_ICEBERG);
    }
  }

  /** Whether {@code version} is of the release line skade is built and tested with. */
  static boolean isTested(String version) {
    return version.equals(TESTED_ICEBERG) || version.startsWith(TESTED_ICEBERG + ".");
  }

  private static IllegalStateException unsupported(String user, List<String> problems) {
    return unsupported(user, FoundVersion.VERSION, problems);
  }

  /**
   * The version of the iceberg-flink of this class's class loader, read once, when first needed.
   */
  private static final class FoundVersion {
    static final String VERSION = icebergFlinkVersion();
  }

  /** The failure of {@code user} on an iceberg-flink {@code version} with {@code problems}. */
  static IllegalStateException unsupported(String user, String version, List<String> problems) {
    String differences = String.join("; ", problems);
    if (isTested(version)) {
      return new IllegalStateException(
          user
              + ": the class path has iceberg-flink "
              + version
              + ", of the release line skade is built and tested with ("
              + TESTED_ICEBERG
              + ".x), but Iceberg internals skade relies on differ: "
              + differences
              + ". Is a second Iceberg version on the class path, or skade's jar in another class"
              + " loader than Iceberg's? Keep one iceberg-flink-2.1 "
              + TESTED_ICEBERG
              + ".x, in the class loader of skade's jar.");
    }
    boolean known = !UNKNOWN.equals(version);
    return new IllegalStateException(
        user
            + ": skade is built and tested with iceberg-flink "
            + TESTED_ICEBERG
            + ".x, but the class path has "
            + (known ? "iceberg-flink " + version : "an iceberg-flink of unknown version")
            + ", where Iceberg internals skade relies on differ: "
            + differences
            + ". Use org.apache.iceberg:iceberg-flink-2.1 "
            + TESTED_ICEBERG
            + ".x, or a skade build for "
            + (known ? "Iceberg " + version : "that Iceberg")
            + ".");
  }

  /**
   * The version of the iceberg-flink on the class path: the {@value #BUILD_PROPERTIES} beside its
   * classes (every Iceberg jar has one), else Iceberg's own {@link IcebergBuild#version()} (which
   * may be another Iceberg jar's), else {@value #UNKNOWN}.
   */
  public static String icebergFlinkVersion() {
    String self = IcebergSink.class.getName().replace('.', '/') + ".class";
    URL classFile = IcebergSink.class.getClassLoader().getResource(self);
    if (classFile != null && classFile.toString().endsWith(self)) {
      String root = classFile.toString();
      root = root.substring(0, root.length() - self.length());
      try {
        URLConnection connection = URI.create(root + BUILD_PROPERTIES).toURL().openConnection();
        connection.setUseCaches(false); // a cached jar would stay open after a job's class loader
        try (InputStream in = connection.getInputStream()) {
          Properties build = new Properties();
          build.load(in);
          String version = build.getProperty("git.build.version");
          if (version != null && !version.isBlank()) {
            return version.trim();
          }
        }
      } catch (IOException | IllegalArgumentException e) {
        LOG.debug("no {} beside {}", BUILD_PROPERTIES, classFile, e);
      }
    }
    try {
      return IcebergBuild.version();
    } catch (RuntimeException | LinkageError e) {
      return UNKNOWN;
    }
  }

  /**
   * What differs between iceberg-flink's classes and the members a seam reaches: each method takes
   * the owner a previous step returned (null when that was missing: then it adds nothing) and notes
   * a missing or different member as a problem, in words a user can report.
   */
  static final class Shape {
    private final List<String> problems = new ArrayList<>();

    /** The problems noted so far. */
    List<String> problems() {
      return List.copyOf(problems);
    }

    /** Notes {@code problem} unless {@code holds}. */
    void require(boolean holds, String problem) {
      if (!holds) {
        problems.add(problem);
      }
    }

    /**
     * The class {@code name}, loaded (not initialized) as skade's classes load Iceberg's, and
     * skade's classes in Iceberg's packages.
     */
    Class<?> type(String name) {
      try {
        return Class.forName(name, false, IcebergInternals.class.getClassLoader());
      } catch (ClassNotFoundException | LinkageError e) {
        problems.add("class " + name + " is missing (" + e + ")");
        return null;
      }
    }

    /**
     * The method {@code owner.name(parameters)} returning exactly {@code returns}, static or not as
     * {@code isStatic} says, and not private (so a class of its package may call it).
     */
    Method method(
        Class<?> owner, boolean isStatic, Class<?> returns, String name, Class<?>... parameters) {
      if (owner == null) {
        return null;
      }
      String what = owner.getName() + "." + name + signature(parameters);
      Method method;
      try {
        method = owner.getDeclaredMethod(name, parameters);
      } catch (NoSuchMethodException e) {
        problems.add(what + " is missing");
        return null;
      } catch (LinkageError e) {
        problems.add(what + " cannot be inspected (" + e + ")");
        return null;
      }
      require(
          method.getReturnType() == returns,
          what + " returns " + method.getReturnType().getName() + ", not " + returns.getName());
      require(
          Modifier.isStatic(method.getModifiers()) == isStatic,
          what + (isStatic ? " is not static" : " is static"));
      require(!Modifier.isPrivate(method.getModifiers()), what + " is private");
      return method;
    }

    /** The constructor {@code owner(parameters)}, not private. */
    Constructor<?> constructor(Class<?> owner, Class<?>... parameters) {
      if (owner == null) {
        return null;
      }
      String what = "constructor " + owner.getName() + signature(parameters);
      try {
        Constructor<?> constructor = owner.getDeclaredConstructor(parameters);
        require(!Modifier.isPrivate(constructor.getModifiers()), what + " is private");
        return constructor;
      } catch (NoSuchMethodException e) {
        problems.add(what + " is missing");
      } catch (LinkageError e) {
        problems.add(what + " cannot be inspected (" + e + ")");
      }
      return null;
    }

    /** The static field {@code owner.name}, of any type. */
    Field staticField(Class<?> owner, String name) {
      if (owner == null) {
        return null;
      }
      String what = "field " + owner.getName() + "." + name;
      Field field;
      try {
        field = owner.getDeclaredField(name);
      } catch (NoSuchFieldException e) {
        problems.add(what + " is missing");
        return null;
      } catch (LinkageError e) {
        problems.add(what + " cannot be inspected (" + e + ")");
        return null;
      }
      require(Modifier.isStatic(field.getModifiers()), what + " is not static");
      return field;
    }

    /**
     * Notes unless {@code skade}, a class of skade's in an Iceberg package, shares the runtime
     * package of {@code iceberg} (its package and its class loader), which its package-private
     * access needs.
     */
    void samePackage(Class<?> skade, Class<?> iceberg) {
      if (skade == null || iceberg == null) {
        return;
      }
      require(
          skade.getPackageName().equals(iceberg.getPackageName())
              && skade.getClassLoader() == iceberg.getClassLoader(),
          skade.getName()
              + " (loaded by "
              + skade.getClassLoader()
              + ") and "
              + iceberg.getName()
              + " (loaded by "
              + iceberg.getClassLoader()
              + ") are not in one runtime package; both jars must be in one class loader");
    }

    /** Notes each abstract method of {@code base} that {@code implementation} does not declare. */
    void implementsEveryAbstractMethod(Class<?> implementation, Class<?> base) {
      if (implementation == null || base == null) {
        return;
      }
      try {
        for (Method method : base.getDeclaredMethods()) {
          if (Modifier.isAbstract(method.getModifiers())) {
            try {
              implementation.getDeclaredMethod(method.getName(), method.getParameterTypes());
            } catch (NoSuchMethodException e) {
              problems.add(
                  implementation.getName()
                      + " does not implement the abstract "
                      + base.getName()
                      + "."
                      + method.getName()
                      + signature(method.getParameterTypes()));
            }
          }
        }
      } catch (LinkageError e) {
        problems.add(implementation.getName() + " cannot be inspected (" + e + ")");
      }
    }

    private static String signature(Class<?>[] parameters) {
      return Arrays.stream(parameters)
          .map(Class::getSimpleName)
          .collect(Collectors.joining(", ", "(", ")"));
    }
  }
}
