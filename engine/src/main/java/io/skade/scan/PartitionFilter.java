package io.skade.scan;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.BoundPredicate;
import org.apache.iceberg.expressions.BoundReference;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.ExpressionVisitors;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ManifestEvaluator;
import org.apache.iceberg.expressions.Projections;
import org.apache.iceberg.expressions.UnboundPredicate;

/**
 * Which data files, delete files and manifests may hold rows matching a row filter, judged by
 * partition alone: Iceberg's inclusive projection of the filter onto each partition spec, evaluated
 * on a file's partition tuple or a manifest's partition summaries. Inclusive means whatever it
 * rules out holds no matching row (what it keeps may hold none). Files of an unpartitioned spec,
 * such as equality deletes that apply to every partition, are always kept.
 *
 * <p>A file's partition never changes, so a file is ruled in or out the same way at every snapshot:
 * a window compares states with the same files missing on both sides.
 *
 * <p>Thread-safe: manifests are judged from several threads.
 */
public final class PartitionFilter {
  private final Map<Integer, PartitionSpec> specs;
  private final Schema schema;
  private final Expression filter;
  private final boolean caseSensitive;
  private final boolean keepsAll;

  /** Per spec id, how its files are judged; empty when the spec's files are all kept. */
  private final Map<Integer, Optional<SpecFilter>> bySpec = new ConcurrentHashMap<>();

  private record SpecFilter(Evaluator files, ManifestEvaluator manifests) {}

  public PartitionFilter(
      Map<Integer, PartitionSpec> specs, Schema schema, Expression filter, boolean caseSensitive) {
    this.specs = specs;
    this.schema = schema;
    this.filter = filter;
    this.caseSensitive = caseSensitive;
    this.keepsAll = filter.op() == Expression.Operation.TRUE;
  }

  /** Whether this filter keeps every file (there is nothing to prune). */
  public boolean keepsAll() {
    return keepsAll;
  }

  /** False when no file the manifest lists can hold a matching row. */
  public boolean mayMatch(ManifestFile manifest) {
    if (keepsAll) {
      return true;
    }
    return of(manifest.partitionSpecId()).map(f -> f.manifests().eval(manifest)).orElse(true);
  }

  /** False when the file's partition holds no row matching the filter. */
  public boolean mayMatch(ContentFile<?> file) {
    if (keepsAll) {
      return true;
    }
    return of(file.specId()).map(f -> f.files().eval(file.partition())).orElse(true);
  }

  private Optional<SpecFilter> of(int specId) {
    return bySpec.computeIfAbsent(
        specId,
        id -> {
          PartitionSpec spec = specs.get(id);
          if (spec == null || spec.isUnpartitioned()) {
            return Optional.empty();
          }
          Expression projected =
              Projections.inclusive(spec, caseSensitive).project(projectable(spec));
          if (projected.op() == Expression.Operation.TRUE) {
            return Optional.empty();
          }
          return Optional.of(
              new SpecFilter(
                  new Evaluator(spec.partitionType(), projected, caseSensitive),
                  ManifestEvaluator.forPartitionFilter(projected, spec, caseSensitive)));
        });
  }

  /**
   * The filter without what Iceberg 1.11 projects wrongly: a predicate on a transform of a column
   * (such as {@code bucket(id, 8) = 3}) where the spec partitions by that column itself (identity).
   * The identity projection drops the predicate's transform and would compare the column with the
   * transformed literal, ruling out matching files (apache/iceberg#15502). Such a predicate becomes
   * true, which keeps more files, never fewer; negations are pushed into the predicates first so
   * that holds.
   */
  private Expression projectable(PartitionSpec spec) {
    return ExpressionVisitors.visit(
        Expressions.rewriteNot(filter),
        new ExpressionVisitors.ExpressionVisitor<>() {
          @Override
          public Expression alwaysTrue() {
            return Expressions.alwaysTrue();
          }

          @Override
          public Expression alwaysFalse() {
            return Expressions.alwaysFalse();
          }

          @Override
          public Expression not(Expression result) {
            throw new IllegalStateException("a not left after rewriteNot in " + filter);
          }

          @Override
          public Expression and(Expression left, Expression right) {
            return Expressions.and(left, right);
          }

          @Override
          public Expression or(Expression left, Expression right) {
            return Expressions.or(left, right);
          }

          @Override
          public <T> Expression predicate(BoundPredicate<T> pred) {
            return projectsWrongly(pred, spec) ? Expressions.alwaysTrue() : pred;
          }

          @Override
          public <T> Expression predicate(UnboundPredicate<T> pred) {
            Expression bound = pred.bind(schema.asStruct(), caseSensitive);
            return bound instanceof BoundPredicate<?> predicate && projectsWrongly(predicate, spec)
                ? Expressions.alwaysTrue()
                : pred;
          }
        });
  }

  private static boolean projectsWrongly(BoundPredicate<?> predicate, PartitionSpec spec) {
    if (predicate.term() instanceof BoundReference) {
      return false;
    }
    return spec.getFieldsBySourceId(predicate.ref().fieldId()).stream()
        .anyMatch(field -> field.transform().isIdentity());
  }
}
