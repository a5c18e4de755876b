/*
 * Strait test tooling: which names java.util.regex matches in full with each pattern, as MM2 reads `topics` and
 * `groups` (Pattern.compile(...).matcher(name).matches()).
 *
 * Usage: java RegexMatch < lines, each "P<TAB>pattern" or "N<TAB>name". Prints "M<TAB>p<TAB>n" for every pattern
 * index p that matches name index n, and "E<TAB>p" for a pattern Java refuses.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public final class RegexMatch {

    private RegexMatch() {
    }

    public static void main(String[] args) throws Exception {
        List<String> patterns = new ArrayList<>();
        List<String> names = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.startsWith("P\t")) {
                patterns.add(line.substring(2));
            } else if (line.startsWith("N\t")) {
                names.add(line.substring(2));
            }
        }
        StringBuilder out = new StringBuilder();
        for (int p = 0; p < patterns.size(); p++) {
            Pattern pattern;
            try {
                pattern = Pattern.compile(patterns.get(p));
            } catch (PatternSyntaxException refused) {
                out.append("E\t").append(p).append('\n');
                continue;
            }
            for (int n = 0; n < names.size(); n++) {
                if (pattern.matcher(names.get(n)).matches()) {
                    out.append("M\t").append(p).append('\t').append(n).append('\n');
                }
            }
        }
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }
}
