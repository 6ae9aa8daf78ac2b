package io.zskip.rule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.zskip.bridge.Answers;
import java.util.List;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RememberedPlansTest {
  static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  static final PartitionSpec SPEC = PartitionSpec.unpartitioned();

  static FileScanTask task(String path) {
    DataFile file = DataFiles.builder(SPEC)
        .withPath(path)
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(1200)
        .withRecordCount(1000)
        .build();
    return new BaseFileScanTask(file, new org.apache.iceberg.DeleteFile[0],
        SchemaParser.toJson(SCHEMA), PartitionSpecParser.toJson(SPEC),
        ResidualEvaluator.unpartitioned(Expressions.alwaysTrue()));
  }

  @AfterEach
  void forget() {
    RememberedPlans.clear();
  }

  @Test
  void keptFilesFollowTheirPathsWhenIcebergListsTasksInAnotherOrder() throws Exception {
    List<FileScanTask> planned = List.of(task("/t/a.parquet"), task("/t/b.parquet"), task("/t/c.parquet"));
    ArrayNode answer = (ArrayNode) Answers.MAPPER.readTree("[[2], [0, [4, 400, 800, 1100]]]");
    ArrayNode byPath = RememberedPlans.byPath(answer, planned);
    assertEquals("[[\"/t/c.parquet\"],[\"/t/a.parquet\",[4,400,800,1100]]]", byPath.toString());

    List<FileScanTask> replanned = List.of(task("/t/c.parquet"), task("/t/a.parquet"), task("/t/b.parquet"));
    assertEquals("[[0],[1,[4,400,800,1100]]]", RememberedPlans.byPosition(byPath, replanned).toString());
  }

  @Test
  void aKeptFileNoLongerPlannedMakesTheAnswerUnusable() throws Exception {
    ArrayNode byPath = (ArrayNode) Answers.MAPPER.readTree("[[\"/t/a.parquet\"], [\"/t/gone.parquet\"]]");
    assertNull(RememberedPlans.byPosition(byPath, List.of(task("/t/a.parquet"), task("/t/b.parquet"))));
  }

  @Test
  void theLeastRecentlyUsedAnswersGoFirstPastTheBound() {
    for (int i = 0; i <= RememberedPlans.MAX_ANSWERS; i++) {
      RememberedPlans.remember("key " + i, new RememberedPlans.Answer("note", null, null, 10));
      if (i == 1) {
        assertNotNull(RememberedPlans.answer("key 0")); // used: now the most recent
      }
    }
    assertEquals(RememberedPlans.MAX_ANSWERS, RememberedPlans.size());
    assertNotNull(RememberedPlans.answer("key 0"));
    assertNull(RememberedPlans.answer("key 1"));
  }

  @Test
  void answersAreBoundedByTheCharactersTheyHoldToo() {
    long half = RememberedPlans.MAX_CHARS / 2 + 1;
    RememberedPlans.remember("first", new RememberedPlans.Answer("note", null, null, half));
    RememberedPlans.remember("second", new RememberedPlans.Answer("note", null, null, half));
    assertNull(RememberedPlans.answer("first"));
    assertNotNull(RememberedPlans.answer("second"));
  }
}
