package io.zskip.procedures;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code CALL} statement's text taken apart: the procedure's name and each argument's name (none when
 * positional) and expression, as written.  Spark 3.5's own grammar has no {@code CALL}; this finds the
 * statement's parts so that Spark's parser can read each of them (the name as a multi-part identifier,
 * each argument as an expression).  Quotes, brackets and comments are respected: a comma or {@code =>}
 * inside a string or {@code array(...)} separates nothing.
 */
record CallText(String name, List<Argument> arguments) {
  /** One argument: its name ({@code null}: positional) and its expression's text. */
  record Argument(String name, String expression) {}

  private static final Pattern NAMED = Pattern.compile("\\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\\s*=>(.*)", Pattern.DOTALL);

  /**
   * {@code sql}'s parts when it is a {@code CALL} statement, {@code null} when it is not one; an
   * {@link IllegalArgumentException} saying what is wrong when it is one that cannot be read.
   */
  static CallText parse(String sql) {
    if (!isCall(sql)) {
      return null;
    }
    String text = withoutComments(sql).strip();
    if (text.endsWith(";")) {
      text = text.substring(0, text.length() - 1).strip();
    }
    String rest = text.substring(4).strip();
    int open = outsideQuotes(rest, '(');
    if (open < 0 || !rest.endsWith(")")) {
      throw new IllegalArgumentException(
          "cannot read the CALL statement: write CALL catalog.system.procedure(name => value, ...), got: " + sql.strip());
    }
    String name = rest.substring(0, open).strip();
    if (name.isEmpty()) {
      throw new IllegalArgumentException("cannot read the CALL statement: it names no procedure: " + sql.strip());
    }
    List<Argument> arguments = new ArrayList<>();
    String inner = rest.substring(open + 1, rest.length() - 1);
    if (!inner.isBlank()) {
      for (String piece : split(inner, sql)) {
        Matcher named = NAMED.matcher(piece);
        Argument argument = named.matches()
            ? new Argument(unquoted(named.group(1)), named.group(2).strip())
            : new Argument(null, piece.strip());
        if (argument.expression().isEmpty()) {
          throw new IllegalArgumentException("cannot read the CALL statement: an argument has no value: " + sql.strip());
        }
        arguments.add(argument);
      }
    }
    return new CallText(name, arguments);
  }

  /** Whether {@code sql}'s first word, after any leading comments, is CALL (cheap: every statement is asked). */
  static boolean isCall(String sql) {
    int i = 0;
    while (i < sql.length()) {
      if (Character.isWhitespace(sql.charAt(i))) {
        i++;
      } else if (sql.startsWith("--", i)) {
        int end = sql.indexOf('\n', i);
        i = end < 0 ? sql.length() : end + 1;
      } else if (sql.startsWith("/*", i)) {
        int end = sql.indexOf("*/", i + 2);
        i = end < 0 ? sql.length() : end + 2;
      } else {
        break;
      }
    }
    return sql.regionMatches(true, i, "call", 0, 4) && sql.length() > i + 4
        && (Character.isWhitespace(sql.charAt(i + 4)) || sql.charAt(i + 4) == '`' || sql.startsWith("/*", i + 4));
  }

  /** {@code text} split at its top-level commas (outside quotes and brackets). */
  private static List<String> split(String text, String sql) {
    List<String> pieces = new ArrayList<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\'' || c == '"' || c == '`') {
        i = closing(text, i, sql);
      } else if (c == '(' || c == '[') {
        depth++;
      } else if (c == ')' || c == ']') {
        depth--;
        if (depth < 0) {
          throw new IllegalArgumentException("cannot read the CALL statement: unbalanced brackets: " + sql.strip());
        }
      } else if (c == ',' && depth == 0) {
        pieces.add(text.substring(start, i));
        start = i + 1;
      }
    }
    if (depth != 0) {
      throw new IllegalArgumentException("cannot read the CALL statement: unbalanced brackets: " + sql.strip());
    }
    pieces.add(text.substring(start));
    return pieces;
  }

  /** Where the first {@code wanted} outside quotes is in {@code text}, or -1. */
  private static int outsideQuotes(String text, char wanted) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == wanted) {
        return i;
      }
      if (c == '\'' || c == '"' || c == '`') {
        i = closing(text, i, text);
      }
    }
    return -1;
  }

  /** The position of the quote closing the one at {@code open} (a backslash escapes in strings, as in Spark). */
  private static int closing(String text, int open, String sql) {
    char quote = text.charAt(open);
    for (int i = open + 1; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\' && quote != '`') {
        i++;
      } else if (c == quote) {
        return i;
      }
    }
    throw new IllegalArgumentException("cannot read the CALL statement: a quote " + quote + " is not closed: " + sql.strip());
  }

  /** {@code sql} with its {@code --} and {@code /* *}{@code /} comments (outside quotes) made spaces. */
  static String withoutComments(String sql) {
    StringBuilder out = new StringBuilder(sql.length());
    for (int i = 0; i < sql.length(); i++) {
      char c = sql.charAt(i);
      if (c == '\'' || c == '"' || c == '`') {
        int end = closing(sql, i, sql);
        out.append(sql, i, end + 1);
        i = end;
      } else if (sql.startsWith("--", i)) {
        int end = sql.indexOf('\n', i);
        i = end < 0 ? sql.length() : end;
        out.append(' ');
      } else if (sql.startsWith("/*", i)) {
        int end = sql.indexOf("*/", i + 2);
        if (end < 0) {
          throw new IllegalArgumentException("cannot read the statement: a /* comment is not closed: " + sql.strip());
        }
        i = end + 1;
        out.append(' ');
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  private static String unquoted(String identifier) {
    return identifier.startsWith("`") ? identifier.substring(1, identifier.length() - 1).replace("``", "`") : identifier;
  }
}
