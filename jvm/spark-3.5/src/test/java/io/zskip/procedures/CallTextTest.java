package io.zskip.procedures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CallTextTest {
  @Test
  void namedArgumentsWithArraysAndQuotedCommas() {
    CallText call = CallText.parse(
        "  -- lay out\n CALL zskip.system.optimize(table => 'db.t', by => array('a', 'b'),\n"
            + " where => 'x = '',,'' AND y => 1', `mode` => \"full\");");
    assertEquals("zskip.system.optimize", call.name());
    assertEquals(List.of(
        new CallText.Argument("table", "'db.t'"),
        new CallText.Argument("by", "array('a', 'b')"),
        new CallText.Argument("where", "'x = '',,'' AND y => 1'"),
        new CallText.Argument("mode", "\"full\"")), call.arguments());
  }

  @Test
  void positionalArgumentsAndNone() {
    assertEquals(List.of(new CallText.Argument(null, "'db.t'"), new CallText.Argument(null, "map('a', 1)")),
        CallText.parse("call zskip.system.refresh_indexes('db.t', map('a', 1))").arguments());
    assertEquals(List.of(), CallText.parse("CALL zskip.system.status( )").arguments());
    assertEquals("`zskip`.system.status", CallText.parse("CALL/* x */`zskip`.system.status()").name());
  }

  @Test
  void otherStatementsAreNotCalls() {
    assertNull(CallText.parse("SELECT 'CALL x()' FROM t"));
    assertNull(CallText.parse("callers()"));
    assertTrue(!CallText.isCall("SELECT * FROM calls WHERE s = 'unclosed"));
  }

  @Test
  void malformedCallsSayWhatIsWrong() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CallText.parse("CALL zskip.system.status"))
        .getMessage().startsWith("cannot read the CALL statement: write CALL catalog.system.procedure("));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CallText.parse("CALL zskip.system.status(table => )"))
        .getMessage().contains("an argument has no value"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CallText.parse("CALL zskip.system.status('db.t)"))
        .getMessage().contains("is not closed"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CallText.parse("CALL zskip.system.status(array('a')))"))
        .getMessage().contains("unbalanced"));
  }
}
