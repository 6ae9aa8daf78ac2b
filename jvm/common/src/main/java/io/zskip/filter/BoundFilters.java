package io.zskip.filter;

import io.zskip.rule.RememberedPlans;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.And;
import org.apache.iceberg.expressions.Binder;
import org.apache.iceberg.expressions.BoundPredicate;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Not;
import org.apache.iceberg.expressions.Or;

/**
 * A scan's pushed filters bound to its table's schema once, with the field ids they name: what the rule
 * checks of a table state's first plan ({@link RememberedPlans}, {@link MinMaxSuffices}) from one bind.
 */
public record BoundFilters(List<Expression> bound, Set<Integer> fieldIds) {

  /** {@code filters} bound to {@code schema} (case-insensitively, as Spark resolved them), or {@code null} when one does not bind. */
  public static BoundFilters of(Schema schema, List<Expression> filters) {
    List<Expression> bound = new ArrayList<>(filters.size());
    Set<Integer> ids = new HashSet<>();
    try {
      for (Expression filter : filters) {
        Expression one = Binder.bind(schema.asStruct(), filter, false);
        bound.add(one);
        collect(one, ids);
      }
    } catch (RuntimeException unbound) {
      return null;
    }
    return new BoundFilters(List.copyOf(bound), Set.copyOf(ids));
  }

  /** Whether the filters name none of {@code fields}. */
  public boolean disjointFrom(Set<Integer> fields) {
    for (Integer id : fieldIds) {
      if (fields.contains(id)) {
        return false;
      }
    }
    return true;
  }

  /** The field ids a bound expression names, under any And, Or and Not. */
  static Set<Integer> fieldIds(Expression expression) {
    Set<Integer> ids = new HashSet<>();
    collect(expression, ids);
    return ids;
  }

  private static void collect(Expression expression, Set<Integer> ids) {
    if (expression instanceof And and) {
      collect(and.left(), ids);
      collect(and.right(), ids);
    } else if (expression instanceof Or or) {
      collect(or.left(), ids);
      collect(or.right(), ids);
    } else if (expression instanceof Not not) {
      collect(not.child(), ids);
    } else if (expression instanceof BoundPredicate<?> predicate) {
      ids.add(predicate.ref().fieldId());
    }
  }
}
