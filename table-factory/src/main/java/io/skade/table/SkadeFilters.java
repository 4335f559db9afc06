package io.skade.table;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.functions.FunctionDefinition;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.Binder;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Flink filter expressions as Iceberg row filters that keep exactly the rows Flink would keep.
 *
 * <p>SQL drops a row whose predicate is UNKNOWN (a NULL operand), while Iceberg's evaluator orders
 * NULL first and defines {@code notEq} as {@code !eq}, so a plain translation would keep rows with
 * NULLs. Every predicate is therefore translated under the question asked of it: {@code isTrue(e)}
 * ("e is TRUE") or {@code isFalse(e)} ("e is FALSE"), guarding comparisons with {@code notNull};
 * {@code NOT e} is {@code isFalse(e)}. Anything not certain to be exact (float and double columns,
 * whose NaN Iceberg orders differently, casts, functions, LIKE patterns other than a plain prefix,
 * strings with an unpaired surrogate) is not converted and stays with Flink.
 */
final class SkadeFilters {
  private final Schema schema;
  private final Set<String> columns;

  /**
   * @param schema the table's schema
   * @param columns the columns a filter may name (lower case), e.g. only the key in key-only mode
   */
  SkadeFilters(Schema schema, Set<String> columns) {
    this.schema = schema;
    this.columns = columns;
  }

  /** The exact Iceberg form of {@code filter}, or empty when it has none. */
  Optional<Expression> convert(ResolvedExpression filter) {
    Expression converted;
    try {
      converted = isTrue(filter);
    } catch (NotExact e) {
      return Optional.empty();
    }
    try {
      Binder.bind(schema.asStruct(), converted, false); // e.g. a decimal literal of other scale
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    return Optional.of(converted);
  }

  /** The rows for which {@code e} is TRUE. */
  private Expression isTrue(ResolvedExpression e) {
    if (e instanceof FieldReferenceExpression field) { // a boolean column as a predicate
      return Expressions.and(
          Expressions.notNull(column(field)), Expressions.equal(booleanColumn(field), true));
    }
    CallExpression call = call(e);
    FunctionDefinition f = call.getFunctionDefinition();
    List<ResolvedExpression> args = call.getResolvedChildren();
    if (f == BuiltInFunctionDefinitions.AND) {
      return Expressions.and(isTrue(args.get(0)), isTrue(args.get(1)));
    } else if (f == BuiltInFunctionDefinitions.OR) {
      return Expressions.or(isTrue(args.get(0)), isTrue(args.get(1)));
    } else if (f == BuiltInFunctionDefinitions.NOT) {
      return isFalse(args.get(0));
    } else if (f == BuiltInFunctionDefinitions.IS_NULL) {
      return Expressions.isNull(column(args.get(0)));
    } else if (f == BuiltInFunctionDefinitions.IS_NOT_NULL) {
      return Expressions.notNull(column(args.get(0)));
    } else if (f == BuiltInFunctionDefinitions.LIKE) {
      String name = column(args.get(0));
      return Expressions.and(Expressions.notNull(name), Expressions.startsWith(name, prefix(args)));
    }
    return comparison(f, args, false);
  }

  /** The rows for which {@code e} is FALSE (not UNKNOWN). */
  private Expression isFalse(ResolvedExpression e) {
    if (e instanceof FieldReferenceExpression field) {
      return Expressions.and(
          Expressions.notNull(column(field)), Expressions.equal(booleanColumn(field), false));
    }
    CallExpression call = call(e);
    FunctionDefinition f = call.getFunctionDefinition();
    List<ResolvedExpression> args = call.getResolvedChildren();
    if (f == BuiltInFunctionDefinitions.AND) {
      return Expressions.or(isFalse(args.get(0)), isFalse(args.get(1)));
    } else if (f == BuiltInFunctionDefinitions.OR) {
      return Expressions.and(isFalse(args.get(0)), isFalse(args.get(1)));
    } else if (f == BuiltInFunctionDefinitions.NOT) {
      return isTrue(args.get(0));
    } else if (f == BuiltInFunctionDefinitions.IS_NULL) {
      return Expressions.notNull(column(args.get(0)));
    } else if (f == BuiltInFunctionDefinitions.IS_NOT_NULL) {
      return Expressions.isNull(column(args.get(0)));
    } else if (f == BuiltInFunctionDefinitions.LIKE) {
      String name = column(args.get(0));
      return Expressions.and(
          Expressions.notNull(name), Expressions.notStartsWith(name, prefix(args)));
    }
    return comparison(f, args, true);
  }

  /** {@code column op literal} (either side), negated when {@code negate}, never TRUE on NULL. */
  private Expression comparison(
      FunctionDefinition f, List<ResolvedExpression> args, boolean negate) {
    if (args.size() != 2) {
      throw new NotExact();
    }
    boolean columnFirst = args.get(0) instanceof FieldReferenceExpression;
    String name = column(args.get(columnFirst ? 0 : 1));
    Object value = literal(args.get(columnFirst ? 1 : 0), schema.findField(name).type());
    Op op = Op.of(f);
    if (!columnFirst) {
      op = op.flipped();
    }
    if (negate) {
      op = op.negated();
    }
    Expression predicate =
        switch (op) {
          case EQ -> Expressions.equal(name, value);
          case NE -> Expressions.notEqual(name, value);
          case LT -> Expressions.lessThan(name, value);
          case LE -> Expressions.lessThanOrEqual(name, value);
          case GT -> Expressions.greaterThan(name, value);
          case GE -> Expressions.greaterThanOrEqual(name, value);
        };
    return Expressions.and(Expressions.notNull(name), predicate);
  }

  private enum Op {
    EQ,
    NE,
    LT,
    LE,
    GT,
    GE;

    static Op of(FunctionDefinition f) {
      if (f == BuiltInFunctionDefinitions.EQUALS) {
        return EQ;
      } else if (f == BuiltInFunctionDefinitions.NOT_EQUALS) {
        return NE;
      } else if (f == BuiltInFunctionDefinitions.LESS_THAN) {
        return LT;
      } else if (f == BuiltInFunctionDefinitions.LESS_THAN_OR_EQUAL) {
        return LE;
      } else if (f == BuiltInFunctionDefinitions.GREATER_THAN) {
        return GT;
      } else if (f == BuiltInFunctionDefinitions.GREATER_THAN_OR_EQUAL) {
        return GE;
      }
      throw new NotExact();
    }

    /** {@code a op b} as {@code b op' a}. */
    Op flipped() {
      return switch (this) {
        case EQ, NE -> this;
        case LT -> GT;
        case LE -> GE;
        case GT -> LT;
        case GE -> LE;
      };
    }

    /** {@code NOT (a op b)} for non-NULL operands. */
    Op negated() {
      return switch (this) {
        case EQ -> NE;
        case NE -> EQ;
        case LT -> GE;
        case LE -> GT;
        case GT -> LE;
        case GE -> LT;
      };
    }
  }

  private static CallExpression call(ResolvedExpression e) {
    if (e instanceof CallExpression call) {
      return call;
    }
    throw new NotExact();
  }

  /** The Iceberg name of the column {@code e} references, if it may be filtered on. */
  private String column(ResolvedExpression e) {
    if (!(e instanceof FieldReferenceExpression field)
        || !columns.contains(field.getName().toLowerCase(Locale.ROOT))) {
      throw new NotExact();
    }
    Types.NestedField column = schema.caseInsensitiveFindField(field.getName());
    if (column == null
        || !column.type().isPrimitiveType()
        || column.type().typeId() == Type.TypeID.FLOAT
        || column.type().typeId() == Type.TypeID.DOUBLE) {
      throw new NotExact();
    }
    return column.name();
  }

  private String booleanColumn(FieldReferenceExpression field) {
    String name = column(field);
    if (schema.findField(name).type().typeId() != Type.TypeID.BOOLEAN) {
      throw new NotExact();
    }
    return name;
  }

  /** The prefix of {@code LIKE 'prefix%'}; other patterns are left to Flink. */
  private static String prefix(List<ResolvedExpression> args) {
    if (args.size() != 2 || !(args.get(1) instanceof ValueLiteralExpression literal)) {
      throw new NotExact();
    }
    String pattern =
        literal
            .getValueAs(String.class)
            .filter(SkadeFilters::wellFormed)
            .orElseThrow(NotExact::new);
    String prefix = pattern.endsWith("%") ? pattern.substring(0, pattern.length() - 1) : null;
    if (prefix == null
        || prefix.isEmpty()
        || prefix.contains("%")
        || prefix.contains("_")
        || prefix.contains("\\")) {
      throw new NotExact();
    }
    return prefix;
  }

  /** A non-NULL literal as Iceberg's value for a column of {@code type}. */
  private static Object literal(ResolvedExpression e, Type type) {
    if (!(e instanceof ValueLiteralExpression literal) || literal.isNull()) {
      throw new NotExact();
    }
    Optional<?> value =
        switch (type.typeId()) {
          case BOOLEAN -> literal.getValueAs(Boolean.class);
          case INTEGER -> integral(literal).filter(v -> v == (int) (long) v).map(Long::intValue);
          case LONG -> integral(literal);
          case DECIMAL -> literal.getValueAs(BigDecimal.class);
          case STRING -> literal.getValueAs(String.class).filter(SkadeFilters::wellFormed);
          case DATE -> literal.getValueAs(LocalDate.class).map(d -> (int) d.toEpochDay());
          case TIME -> literal.getValueAs(LocalTime.class).map(t -> t.toNanoOfDay() / 1000);
          case TIMESTAMP ->
              ((Types.TimestampType) type).shouldAdjustToUTC()
                  ? literal.getValueAs(Instant.class).map(SkadeFilters::micros)
                  : literal
                      .getValueAs(LocalDateTime.class)
                      .map(t -> micros(t.toInstant(ZoneOffset.UTC)));
          default -> Optional.empty();
        };
    return value.orElseThrow(NotExact::new);
  }

  /**
   * An integer literal of any width as a long: SQL compares a column with a literal of another
   * integer type by value (a {@code BIGINT} column with the {@code INT} literal of {@code id <
   * 100}), and so does Iceberg once the value has the column's type.
   */
  private static Optional<Long> integral(ValueLiteralExpression literal) {
    return literal
        .getValueAs(Long.class)
        .or(() -> literal.getValueAs(Integer.class).map(Integer::longValue))
        .or(() -> literal.getValueAs(Short.class).map(Short::longValue))
        .or(() -> literal.getValueAs(Byte.class).map(Byte::longValue));
  }

  /**
   * Whether {@code text} has no unpaired surrogate: Flink compares strings as UTF-8, where an
   * unpaired surrogate is a '?', and Iceberg compares them as Java strings, where it is itself.
   */
  private static boolean wellFormed(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  private static long micros(Instant instant) {
    return ChronoUnit.MICROS.between(Instant.EPOCH, instant);
  }

  /** A filter, or a part of one, with no exact Iceberg form. */
  private static final class NotExact extends RuntimeException {
    NotExact() {
      super(null, null, false, false);
    }
  }
}
