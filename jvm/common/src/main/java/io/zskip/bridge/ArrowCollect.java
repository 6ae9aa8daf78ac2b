package io.zskip.bridge;

import io.zskip.spark.SparkLine;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * A bounded result (a sample, a metadata table, an aggregate) as one Arrow IPC stream, collected into this
 * JVM before any byte goes to Python.  PySpark's own Arrow collect ({@code collectAsArrowToPython}) writes
 * each finished task's batches to the Python process's socket from the DAGScheduler's thread, so a Python
 * process that stops reading (a stalled hosted planner) stops every job of every session on the server.
 * Here the job's results are gathered as any collect's are, and the stream is built after it ends.
 */
final class ArrowCollect {
  private ArrowCollect() {}

  static byte[] stream(Dataset<Row> frame) throws IOException {
    Schema schema = SparkLine.arrowSchema(frame);
    byte[][] batches = (byte[][]) SparkLine.arrowBatches(frame).collect();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    WriteChannel channel = new WriteChannel(Channels.newChannel(out));
    MessageSerializer.serialize(channel, schema);
    for (byte[] batch : batches) {
      channel.write(batch); // each is a whole encapsulated record batch message, as Spark serialized it
    }
    ArrowStreamWriter.writeEndOfStream(channel, IpcOption.DEFAULT);
    return out.toByteArray();
  }
}
