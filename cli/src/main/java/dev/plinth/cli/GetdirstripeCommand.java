package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "getdirstripe", mixinStandardHelpOptions = true,
        description = "Show which MDT holds a directory (its entries and what is made in it), as `lfs getdirstripe`. "
                + "A directory is placed on an MDT with `plinth fs mkdir --mdt N`.")
final class GetdirstripeCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Option(names = {"-i", "--mdt-index"}, description = "Print only the MDT index.")
    boolean indexOnly;

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Parameters(paramLabel = "DIR")
    String path;

    @Override
    public Integer call() {
        try (PlinthClient plinth = client.connect()) {
            Attributes attributes = plinth.stat(path);
            if (!attributes.isDirectory()) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, path);
            }
            int mdt = InodeId.mdtIndex(attributes.inodeId());
            if (json) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("path", path);
                out.put("mdt_index", mdt);
                out.put("stripe_count", 0); // not striped over MDTs: one MDT holds every entry
                out.put("hash_type", "none");
                out.put("inode", InodeId.format(attributes.inodeId()));
                System.out.println(Json.write(out));
            } else if (indexOnly) {
                System.out.println(mdt);
            } else {
                // Lustre prints an unstriped directory this way: stripe count 0, its MDT as the offset
                System.out.printf("lmv_stripe_count: 0 lmv_stripe_offset: %d lmv_hash_type: none%n", mdt);
            }
        }
        return 0;
    }
}
