package dev.plinth.cli;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.fuse.FuseMount;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

@Command(name = "umount", mixinStandardHelpOptions = true,
        description = {"Unmount a Plinth mount (lazily: open files stay usable until closed); its mount process then exits."})
final class UmountCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MOUNTPOINT")
    Path mountpoint;

    @Override
    public Integer call() throws InterruptedException {
        if (!FuseMount.isMounted(mountpoint)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, mountpoint + " is not a Plinth mount");
        }
        FuseMount.unmount(mountpoint.toAbsolutePath().normalize());
        for (int i = 0; i < 100 && FuseMount.isMounted(mountpoint); i++) {
            Thread.sleep(50);
        }
        System.out.println("unmounted " + mountpoint);
        return 0;
    }
}
