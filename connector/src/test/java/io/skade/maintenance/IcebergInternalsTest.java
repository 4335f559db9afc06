package io.skade.maintenance;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.name;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import io.skade.maintenance.IcebergInternals.Seam;
import io.skade.maintenance.IcebergInternals.Shape;
import io.skade.sink.SkadeTableLoader;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessageTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.SimpleUdfStreamOperatorFactory;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.maintenance.api.MaintenanceTaskBuilder;
import org.apache.iceberg.flink.maintenance.api.SortedRewriteDataFiles;
import org.apache.iceberg.flink.maintenance.api.TableMaintenance;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner.PlannedGroup;
import org.apache.iceberg.flink.maintenance.operator.RewriteGroups;
import org.apache.iceberg.flink.maintenance.operator.TableChange;
import org.apache.iceberg.flink.sink.IcebergSink;
import org.apache.iceberg.io.WriteResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The contract between skade and the internals of the iceberg-flink it builds with ({@link
 * IcebergInternals}): every seam has the shape skade relies on, the reflected members have the
 * types and modifiers skade expects, the topology skade's sink reaches into is the one
 * iceberg-flink builds, and a task of skade's is taken by Iceberg's table maintenance. An Iceberg
 * upgrade that changes any of them fails here, at build time. Then, on shapes and version strings
 * given, the check while a job is planned: a difference fails with the version found, the one
 * expected and what to do; a present shape passes. And no other class of skade reaches these
 * internals.
 */
class IcebergInternalsTest {
  private static final TableIdentifier ID = TableIdentifier.of("db", "t");
  private static final String USER = "skade sink for db.t";

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  // --- the shapes, against the Iceberg of the build ---------------------------------------------

  @Test
  void everySeamHasTheShapeSkadeReliesOnInTheIcebergOfTheBuild() {
    for (Seam seam : Seam.values()) {
      assertThat(seam.problems()).as("what differs for seam %s", seam).isEmpty();
    }
    assertThatCode(() -> IcebergInternals.requireSeams(USER, Seam.values()))
        .doesNotThrowAnyException();
  }

  @Test
  void theIcebergFlinkOfTheBuildIsOfTheTestedReleaseLine() {
    // Fails when the build moves to another Iceberg line: hold this contract to it, then move
    // TESTED_ICEBERG.
    String version = IcebergInternals.icebergFlinkVersion();
    assertThat(version).isNotEqualTo(IcebergInternals.UNKNOWN);
    assertThat(IcebergInternals.isTested(version))
        .as("iceberg-flink %s is of line %s", version, IcebergInternals.TESTED_ICEBERG)
        .isTrue();
  }

  @Test
  void theBuildersPackagePrivateBuildBuildsIcebergsSinkWithoutAddingItToTheJob() throws Exception {
    Method build = IcebergSink.Builder.class.getDeclaredMethod("build");
    assertThat(build.getReturnType()).isEqualTo(IcebergSink.class);
    assertThat(packagePrivate(build.getModifiers())).as("build() is package-private").isTrue();

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    IcebergSink sink = IcebergInternals.buildSink(builder(env), USER);

    assertThat(sink).isNotNull();
    assertThat(env.getTransformations()).as("nothing added to the job").isEmpty();
  }

  @Test
  void aBadConfigurationOfIcebergsBuilderFailsWithIcebergsOwnError() {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    IcebergSink.Builder noLoader = IcebergSink.forRowData(rows(env));

    assertThatThrownBy(() -> IcebergInternals.buildSink(noLoader, USER))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("Table loader shouldn't be null");
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aCommittableMadeInIcebergsLayoutIsOneIcebergsSerializerWritesTheSame() throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    SimpleVersionedSerializer<Object> serializer =
        (SimpleVersionedSerializer)
            IcebergInternals.buildSink(builder(env), USER).getCommittableSerializer();
    byte[] manifest = {1, 2, 3};

    Object committable = IcebergInternals.committable(serializer, "job", "operator", 7, manifest);

    assertThat(committable.getClass().getName())
        .isEqualTo("org.apache.iceberg.flink.sink.IcebergCommittable");
    assertThat(serializer.getVersion()).isEqualTo(IcebergInternals.COMMITTABLE_LAYOUT);
    Object again =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(committable));
    assertThat(again).isEqualTo(committable);
    assertThat(again.toString()).contains("job").contains("operator").contains("7");
  }

  @Test
  void theRewritesPartsSkadeReadsArePackagePrivateToIcebergsPackage() throws Exception {
    for (String part : List.of("table", "group", "branch", "groupsPerCommit")) {
      Method method = PlannedGroup.class.getDeclaredMethod(part);
      assertThat(Modifier.isStatic(method.getModifiers())).as(part).isFalse();
      assertThat(Modifier.isPrivate(method.getModifiers())).as(part).isFalse();
    }
    assertThat(RewriteGroups.class.getPackageName()).isEqualTo(PlannedGroup.class.getPackageName());
    assertThat(RewriteGroups.class.getClassLoader()).isSameAs(PlannedGroup.class.getClassLoader());
  }

  @Test
  void theSortedCompactionIsATaskOfIcebergsMaintenanceWhichRunsSkadesRewriter() throws Exception {
    create();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    DataStream<TableChange> changes =
        env.fromData(TypeInformation.of(TableChange.class), new TableChange(List.of(), List.of()));

    MaintenanceTaskBuilder<?> task = IcebergInternals.sortedCompaction(Map.of());
    assertThat(task.getClass().getPackageName())
        .isEqualTo(MaintenanceTaskBuilder.class.getPackageName());
    TableMaintenance.forChangeStream(
            changes,
            SkadeTableLoader.forMaintenance(catalog.properties(), ID),
            new CatalogLockFactory(catalog.properties(), ID, "a test"))
        .add(task.scheduleOnCommitCount(1))
        .append();

    // Iceberg's maintenance called the task's package-private append: the rewriter is skade's.
    assertThat(env.getStreamGraph(false).getStreamNodes())
        .map(StreamNode::getOperatorFactory)
        .filteredOn(SimpleUdfStreamOperatorFactory.class::isInstance)
        .map(factory -> ((SimpleUdfStreamOperatorFactory<?>) factory).getUserFunction())
        .hasAtLeastOneElementOfType(SortingRewriteRunner.class);
  }

  // --- the check while a job is planned, on given versions and shapes ---------------------------

  @Test
  void anotherVersionWithADifferentShapeFailsNamingBothVersionsAndWhatToDo() {
    assertThatThrownBy(
            () ->
                IcebergInternals.requireSeams(
                    USER, "1.12.0", List.of("IcebergSink$Builder.build() is missing")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            USER
                + ": skade is built and tested with iceberg-flink 1.11.x, but the class path has"
                + " iceberg-flink 1.12.0, where Iceberg internals skade relies on differ:"
                + " IcebergSink$Builder.build() is missing. Use"
                + " org.apache.iceberg:iceberg-flink-2.1 1.11.x, or a skade build for Iceberg"
                + " 1.12.0.");
  }

  @Test
  void theTestedVersionWithADifferentShapePointsAtASecondIcebergOrAnotherClassLoader() {
    assertThatThrownBy(() -> IcebergInternals.requireSeams(USER, "1.11.0", List.of("a", "b")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith(USER + ": the class path has iceberg-flink 1.11.0")
        .hasMessageContaining("skade relies on differ: a; b.")
        .hasMessageContaining("Is a second Iceberg version on the class path")
        .hasMessageEndingWith(
            "Keep one iceberg-flink-2.1 1.11.x, in the class loader of skade's jar.");
  }

  @Test
  void anUnknownVersionWithADifferentShapeSaysItIsUnknown() {
    assertThatThrownBy(
            () -> IcebergInternals.requireSeams(USER, IcebergInternals.UNKNOWN, List.of("a")))
        .hasMessageContaining("the class path has an iceberg-flink of unknown version")
        .hasMessageEndingWith("or a skade build for that Iceberg.");
  }

  @Test
  void aPresentShapePassesWhateverTheVersion() {
    for (String version : List.of("1.11.0", "1.11.7", "1.12.0", IcebergInternals.UNKNOWN)) {
      assertThatCode(() -> IcebergInternals.requireSeams(USER, version, List.of()))
          .as(version)
          .doesNotThrowAnyException();
    }
  }

  @Test
  void onlyTheTestedReleaseLineIsTested() {
    assertThat(IcebergInternals.isTested("1.11")).isTrue();
    assertThat(IcebergInternals.isTested("1.11.0")).isTrue();
    assertThat(IcebergInternals.isTested("1.11.3")).isTrue();
    assertThat(IcebergInternals.isTested("1.110.0")).isFalse();
    assertThat(IcebergInternals.isTested("1.1")).isFalse();
    assertThat(IcebergInternals.isTested("1.12.0")).isFalse();
  }

  @Test
  void theShapeCheckNotesEveryKindOfDifferenceOnRealIcebergClasses() throws Exception {
    Shape shape = new Shape();
    shape.method(IcebergSink.Builder.class, false, IcebergSink.class, "buildAll");
    shape.method(IcebergSink.Builder.class, false, String.class, "build");
    shape.method(IcebergSink.Builder.class, true, IcebergSink.class, "build");
    shape.method(
        IcebergSink.Builder.class,
        false,
        IcebergSink.Builder.class,
        "forRowData",
        DataStream.class);
    shape.staticField(
        Class.forName("org.apache.iceberg.flink.sink.IcebergWriteAggregator"), "tableLoader");
    shape.constructor(IcebergSink.Builder.class, String.class);
    assertThat(shape.type("org.apache.iceberg.flink.sink.NoSuchAggregator")).isNull();
    shape.samePackage(IcebergInternals.class, PlannedGroup.class);
    shape.implementsEveryAbstractMethod(SortedRewriteDataFiles.class, MaintenanceTaskBuilder.class);
    shape.implementsEveryAbstractMethod(Object.class, MaintenanceTaskBuilder.class);

    String builder = "org.apache.iceberg.flink.sink.IcebergSink$Builder";
    assertThat(shape.problems())
        .containsExactlyInAnyOrder(
            builder + ".buildAll() is missing",
            builder
                + ".build() returns org.apache.iceberg.flink.sink.IcebergSink, not"
                + " java.lang.String",
            builder + ".build() is not static",
            builder + ".forRowData(DataStream) is private",
            "field org.apache.iceberg.flink.sink.IcebergWriteAggregator.tableLoader is not static",
            "constructor " + builder + "(String) is missing",
            "class org.apache.iceberg.flink.sink.NoSuchAggregator is missing"
                + " (java.lang.ClassNotFoundException:"
                + " org.apache.iceberg.flink.sink.NoSuchAggregator)",
            "java.lang.Object does not implement the abstract "
                + MaintenanceTaskBuilder.class.getName()
                + ".append(DataStream)",
            "java.lang.Object does not implement the abstract "
                + MaintenanceTaskBuilder.class.getName()
                + ".maintenanceTaskName()",
            IcebergInternals.class.getName()
                + " (loaded by "
                + IcebergInternals.class.getClassLoader()
                + ") and "
                + PlannedGroup.class.getName()
                + " (loaded by "
                + PlannedGroup.class.getClassLoader()
                + ") are not in one runtime package; both jars must be in one class loader");

    // What a check of another Iceberg notes is what the planned job's failure names.
    assertThatThrownBy(() -> IcebergInternals.requireSeams(USER, "1.12.0", shape.problems()))
        .hasMessageContaining(builder + ".buildAll() is missing; ");
  }

  // --- one place
  // ----------------------------------------------------------------------------------

  @Test
  void noOtherClassOfSkadeUsesItsClassesInIcebergsPackages() {
    noClasses()
        .that()
        .resideOutsideOfPackage("org.apache.iceberg..")
        .and()
        .doNotBelongToAnyOf(IcebergInternals.class)
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(RewriteGroups.class, SortedRewriteDataFiles.class)
        .because("skade's classes in Iceberg's packages are reached through IcebergInternals")
        .check(mainClasses());
  }

  @Test
  void noOtherClassOfSkadeReachesANonPublicMemberByReflection() {
    noClasses()
        .that()
        .doNotBelongToAnyOf(IcebergInternals.class)
        .should()
        .callMethodWhere(target(name("setAccessible")))
        .because("IcebergInternals owns every reflective access to a non-public member")
        .check(mainClasses());
  }

  /** This module's main classes (surefire runs in the module). */
  private static JavaClasses mainClasses() {
    return new ClassFileImporter().importPath(Path.of("target", "classes"));
  }

  private IcebergSink.Builder builder(StreamExecutionEnvironment env) {
    Table table = catalog.get().tableExists(ID) ? catalog.get().loadTable(ID) : create();
    return IcebergSink.forRowData(rows(env))
        .tableLoader(new SkadeTableLoader(catalog.properties(), ID))
        .table(table);
  }

  private Table create() {
    return catalog.get().createTable(ID, IdRows.SCHEMA);
  }

  private static DataStream<RowData> rows(StreamExecutionEnvironment env) {
    return env.fromData(
        List.<RowData>of(GenericRowData.of(1L, StringData.fromString("ada"))),
        InternalTypeInfo.of(FlinkSchemaUtil.convert(IdRows.SCHEMA)));
  }

  /** A stream of the writers' committables, as Iceberg's pre-commit topology takes it. */
  private static DataStream<CommittableMessage<WriteResult>> written(
      StreamExecutionEnvironment env, IcebergSink sink) {
    return rows(env)
        .map(
            row -> (CommittableMessage<WriteResult>) null,
            CommittableMessageTypeInfo.of(sink::getWriteResultSerializer));
  }

  private static boolean packagePrivate(int modifiers) {
    return !Modifier.isPublic(modifiers)
        && !Modifier.isProtected(modifiers)
        && !Modifier.isPrivate(modifiers);
  }
}
