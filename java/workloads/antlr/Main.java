import java.io.File;
import java.nio.file.Files;
import org.antlr.v4.Tool;

/**
 * Workload "antlr": the ANTLR 4 tool (a parser generator, DaCapo's antlr and seed 000's
 * javacup/jax) analyses a 60-rule grammar of a small imperative language and generates its
 * lexer, parser, listener and visitor for Java, Python 3 and C++. Args: OUT_DIR.
 */
public final class Main {
    static final String GRAMMAR = """
        grammar Mini;
        program : (decl | stmt)* EOF ;
        decl : 'var' ID (':' type)? ('=' expr)? ';' | 'fun' ID '(' params? ')' (':' type)? block
             | 'struct' ID '{' (field ';')* '}' | 'enum' ID '{' ID (',' ID)* '}' ;
        field : ID ':' type ;
        params : param (',' param)* ;
        param : ID ':' type ;
        type : 'int' | 'bool' | 'string' | 'float' | ID | type '[' ']' | type '?' | '(' type (',' type)* ')' '->' type ;
        block : '{' (decl | stmt)* '}' ;
        stmt : block | 'if' '(' expr ')' stmt ('else' stmt)? | 'while' '(' expr ')' stmt
             | 'for' '(' forInit? ';' expr? ';' exprList? ')' stmt | 'return' expr? ';'
             | 'break' ';' | 'continue' ';' | 'switch' '(' expr ')' '{' caseClause* defaultClause? '}'
             | 'try' block catchClause+ ('finally' block)? | 'throw' expr ';' | expr ';' | ';' ;
        forInit : 'var' ID '=' expr | exprList ;
        caseClause : 'case' expr (',' expr)* ':' stmt* ;
        defaultClause : 'default' ':' stmt* ;
        catchClause : 'catch' '(' ID ':' type ')' block ;
        exprList : expr (',' expr)* ;
        expr : primary
             | expr '.' ID
             | expr '[' expr ']'
             | expr '(' exprList? ')'
             | expr ('++' | '--')
             | ('-' | '!' | '~' | '++' | '--') expr
             | expr ('*' | '/' | '%') expr
             | expr ('+' | '-') expr
             | expr ('<<' | '>>' | '>>>') expr
             | expr ('<' | '<=' | '>' | '>=') expr
             | expr 'is' type
             | expr ('==' | '!=') expr
             | expr '&' expr
             | expr '^' expr
             | expr '|' expr
             | expr '&&' expr
             | expr '||' expr
             | expr '?' expr ':' expr
             | <assoc=right> expr ('=' | '+=' | '-=' | '*=' | '/=' | '%=' | '&=' | '|=' | '^=') expr
             | 'fun' '(' params? ')' '=>' (expr | block)
             ;
        primary : '(' expr ')' | literal | ID | 'new' ID '(' exprList? ')' | '[' exprList? ']'
                | ID '{' (ID ':' expr (',' ID ':' expr)*)? '}' ;
        literal : INT | FLOAT | STRING | 'true' | 'false' | 'null' ;
        ID : [a-zA-Z_] [a-zA-Z_0-9]* ;
        INT : [0-9]+ | '0x' [0-9a-fA-F]+ ;
        FLOAT : [0-9]+ '.' [0-9]* ([eE] [+-]? [0-9]+)? ;
        STRING : '"' (~["\\\\\\r\\n] | '\\\\' .)* '"' ;
        LINE_COMMENT : '//' ~[\\r\\n]* -> skip ;
        BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
        WS : [ \\t\\r\\n]+ -> skip ;
        """;

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        out.mkdirs();
        File g = new File(out, "Mini.g4");
        Files.writeString(g.toPath(), GRAMMAR);
        int errors = 0;
        for (String lang : new String[] {"Java", "Python3", "Cpp"}) {
            Tool tool = new Tool(new String[] {"-Dlanguage=" + lang, "-visitor", "-listener",
                "-o", new File(out, lang).getPath(), g.getPath()});
            tool.processGrammarsOnCommandLine();
            errors += tool.getNumErrors();
        }
        System.out.println("antlr: generated for 3 targets, errors " + errors);
        if (errors != 0) {
            System.exit(1);
        }
    }
}
